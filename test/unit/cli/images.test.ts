import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { extractImagePaths, isImagePath } from "../../../server/cli/images.ts";

const files = new Set([
  "/home/u/cat.jpg",
  "/abs/x.png",
  "/home/u/my pics/dog.webp",
  "/home/u/notes.txt",
  "/tmp/A.JPEG",
]);
const resolve = (p: string) => (p.startsWith("~/") ? path.join("/home/u", p.slice(2)) : path.resolve("/home/u", p));
const exists = (p: string) => files.has(p);
const run = (prompt: string) => extractImagePaths(prompt, resolve, exists);

test("isImagePath knows image extensions, case-insensitively", () => {
  assert.equal(isImagePath("a/b.PNG"), true);
  assert.equal(isImagePath("x.jpeg"), true);
  assert.equal(isImagePath("x.gguf"), false);
  assert.equal(isImagePath("png"), false);
});

test("relative, absolute and ~ paths of existing images are attached and removed from the prompt", () => {
  assert.deepEqual(run("what is in ./cat.jpg?"), { prompt: "what is in ?", paths: ["/home/u/cat.jpg"], missing: [] });
  assert.deepEqual(run("compare /abs/x.png and ~/cat.jpg please"), {
    prompt: "compare and please",
    paths: ["/abs/x.png", "/home/u/cat.jpg"],
    missing: [],
  });
  assert.deepEqual(run("describe /tmp/A.JPEG"), { prompt: "describe", paths: ["/tmp/A.JPEG"], missing: [] });
});

test("quoted paths and escaped spaces", () => {
  assert.deepEqual(run(`look at "./my pics/dog.webp" now`), {
    prompt: "look at now",
    paths: ["/home/u/my pics/dog.webp"],
    missing: [],
  });
  assert.deepEqual(run(String.raw`look at ./my\ pics/dog.webp`), {
    prompt: "look at",
    paths: ["/home/u/my pics/dog.webp"],
    missing: [],
  });
});

test("non-images and bare words stay as text; a missing image stays too and is reported", () => {
  for (const p of ["read ./notes.txt", "the file cat.jpg", "a/b path", "1/2 of it"]) {
    assert.deepEqual(run(p), { prompt: p, paths: [], missing: [] }, p);
  }
  assert.deepEqual(run(`what is ./missing.png and "~/no such.webp"`), {
    prompt: `what is ./missing.png and "~/no such.webp"`,
    paths: [],
    missing: ["./missing.png", "~/no such.webp"],
  });
});
