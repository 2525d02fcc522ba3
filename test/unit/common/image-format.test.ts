import assert from "node:assert/strict";
import { test } from "node:test";
import { imageProblem, sniffImageFormat } from "../../../server/common/image-format.ts";
import { encodeBmp, encodeGif, encodeJpeg, encodePng, solidImage } from "../../support/images.ts";

const img = solidImage(4, 4, [1, 2, 3]);

test("the formats image inputs take are told by their first bytes", () => {
  assert.equal(sniffImageFormat(encodePng(img)), "PNG");
  assert.equal(sniffImageFormat(encodeJpeg(img)), "JPEG");
  assert.equal(sniffImageFormat(encodeGif([img])), "GIF");
  assert.equal(sniffImageFormat(encodeBmp(img)), "BMP");
  assert.equal(sniffImageFormat(Buffer.from("RIFF\x10\x00\x00\x00WEBPVP8 ", "latin1")), "WebP");
});

test("other image formats are named; anything else is not an image", () => {
  assert.deepEqual(sniffImageFormat(Buffer.from([0x49, 0x49, 0x2a, 0x00, 1, 2])), { unsupported: "TIFF" });
  assert.deepEqual(sniffImageFormat(Buffer.from("\x00\x00\x00\x1cftypavif", "latin1")), { unsupported: "AVIF" });
  assert.deepEqual(sniffImageFormat(Buffer.from("\x00\x00\x00\x18ftypheic", "latin1")), { unsupported: "HEIC/HEIF" });
  assert.deepEqual(sniffImageFormat(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg">')), { unsupported: "SVG" });
  assert.equal(sniffImageFormat(Buffer.from("hello")), undefined);
  assert.equal(sniffImageFormat(Buffer.from("RIFF\x10\x00\x00\x00WAVE", "latin1")), undefined);
});

test("imageProblem: empty, over the limit, not an image, unsupported; none for a good one", () => {
  assert.equal(imageProblem(new Uint8Array(0), 100), "empty image data");
  assert.match(
    imageProblem(encodeBmp(solidImage(20, 20, [0, 0, 0])), 1024)!,
    /is 1\.2 KiB, over the limit of 1\.0 KiB/,
  );
  assert.match(
    imageProblem(Buffer.from("just text"), 1024)!,
    /^not an image \(expected JPEG, PNG, WebP, GIF, BMP data/,
  );
  assert.match(imageProblem(Buffer.from([0x4d, 0x4d, 0x00, 0x2a]), 1024)!, /^unsupported image format TIFF/);
  assert.equal(imageProblem(encodePng(img), 1024), undefined);
});
