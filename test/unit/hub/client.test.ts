import assert from "node:assert/strict";
import { it } from "node:test";
import { hubStatusError, isRetryableStatus, nextLink, sha256FromEtag } from "../../../server/hub/client.ts";

const ref = { org: "acme", repo: "private" };

it("turns hub statuses into errors naming the repo or file", () => {
  const table: Array<[number, string | undefined, string, RegExp]> = [
    [401, undefined, "UNAUTHORIZED", /repository hf\.co\/acme\/private \(401\).*set HF_TOKEN/],
    [401, "m.gguf", "UNAUTHORIZED", /file m\.gguf in hf\.co\/acme\/private \(401\).*HF_TOKEN/],
    [403, "m.gguf", "FORBIDDEN", /file m\.gguf in hf\.co\/acme\/private \(403\): HF_TOKEN lacks permission/],
    [404, undefined, "MODEL_NOT_FOUND", /^repository hf\.co\/acme\/private not found on the hub$/],
    [404, "m.gguf", "MODEL_NOT_FOUND", /^file m\.gguf not found in hf\.co\/acme\/private$/],
    [500, "m.gguf", "UPSTREAM_FAILED", /answered 500 for file m\.gguf/],
  ];
  for (const [status, file, code, message] of table) {
    const e = hubStatusError(status, ref, file);
    assert.equal(e.code, code);
    assert.match(e.message, message);
  }
});

it("retries only transient statuses", () => {
  assert.deepEqual([408, 429, 500, 503, 401, 403, 404, 416].map(isRetryableStatus), [
    true,
    true,
    true,
    true,
    false,
    false,
    false,
    false,
  ]);
});

it("reads the sha256 from LFS ETags and ignores git ones", () => {
  const sha = "ab".repeat(32);
  assert.equal(sha256FromEtag(`"${sha}"`), sha);
  assert.equal(sha256FromEtag(`W/"${sha.toUpperCase()}"`), sha);
  assert.equal(sha256FromEtag(`"${"a".repeat(40)}"`), undefined);
  assert.equal(sha256FromEtag(null), undefined);
});

it("follows the tree API's Link pagination", () => {
  const cur = "https://huggingface.co/api/models/a/b/tree/main?recursive=true";
  assert.equal(
    nextLink('<https://huggingface.co/api/models/a/b/tree/main?recursive=true&cursor=xyz>; rel="next"', cur),
    "https://huggingface.co/api/models/a/b/tree/main?recursive=true&cursor=xyz",
  );
  assert.equal(
    nextLink('</api/models/a/b/tree/main?cursor=2>; rel="next"', cur),
    "https://huggingface.co/api/models/a/b/tree/main?cursor=2",
  );
  assert.equal(nextLink('<https://x/prev>; rel="prev"', cur), null);
  assert.equal(nextLink(null, cur), null);
});
