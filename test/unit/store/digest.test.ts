import assert from "node:assert/strict";
import { test } from "node:test";
import { AppError } from "../../../server/common/errors.ts";
import { blobFileName, digestFromFileName, digestHex, parseDigest } from "../../../server/store/digest.ts";

const HEX = "a".repeat(32) + "0123456789abcdef".repeat(2);

test("parseDigest accepts both separators and normalises to sha256:<lower hex>", () => {
  const cases: [string, string][] = [
    [`sha256:${HEX}`, `sha256:${HEX}`],
    [`sha256-${HEX}`, `sha256:${HEX}`],
    [`sha256:${HEX.toUpperCase()}`, `sha256:${HEX}`],
  ];
  for (const [input, expected] of cases) assert.equal(parseDigest(input), expected, input);
});

test("parseDigest rejects anything that could escape blobs/ or is not a sha256", () => {
  const bad = [
    "",
    "sha256:",
    `sha256:${HEX.slice(1)}`, // 63 hex digits
    `sha256:${HEX}0`, // 65
    `sha512:${HEX}`,
    `SHA256:${HEX}`,
    `sha256_${HEX}`,
    `${HEX}`,
    `sha256:${HEX.slice(2)}..`,
    `sha256:../../../../etc/passwd`,
    `sha256:${HEX}/../x`,
    `sha256:${HEX}\n`,
    ` sha256:${HEX}`,
    `sha256:${"g".repeat(64)}`,
  ];
  for (const input of bad) {
    assert.throws(
      () => parseDigest(input),
      (e: unknown) => e instanceof AppError && e.code === "STORE_INVALID_DIGEST" && e.status === 400,
      JSON.stringify(input),
    );
  }
});

test("blob file names use '-' and map back to the digest; other names are not blobs", () => {
  const d = parseDigest(`sha256:${HEX}`);
  assert.equal(blobFileName(d), `sha256-${HEX}`);
  assert.equal(digestHex(d), HEX);
  assert.equal(digestFromFileName(`sha256-${HEX}`), d);
  for (const stray of [
    `tmp-1234-partial`,
    `sha256-${HEX}-partial`,
    `sha256:${HEX}`,
    `sha256-${HEX.toUpperCase()}`,
    ".DS_Store",
  ]) {
    assert.equal(digestFromFileName(stray), null, stray);
  }
});
