import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { userTurn } from "../../../server/cli/answer.ts";

test("userTurn attaches image files named in the text as base64 and keeps other text", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-turn-"));
  const png = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
  fs.writeFileSync(path.join(dir, "cat.png"), png);
  fs.writeFileSync(path.join(dir, "dog.jpg"), Buffer.from("jpeg bytes"));
  const said: string[] = [];
  const ctx = {
    cwd: dir,
    say: (l: string) => {
      said.push(l);
    },
  };

  assert.deepEqual(userTurn(ctx, "what is in ./cat.png?"), {
    role: "user",
    content: "what is in ?",
    images: [png.toString("base64")],
  });
  assert.deepEqual(said, [`Added image '${path.join(dir, "cat.png")}'`]);

  const both = userTurn(ctx, "compare", [path.join(dir, "dog.jpg")]);
  assert.deepEqual(both.images, [Buffer.from("jpeg bytes").toString("base64")]);

  // No images: the text goes unchanged (spacing included).
  assert.deepEqual(userTurn(ctx, "  plain   text ./notes.txt "), {
    role: "user",
    content: "  plain   text ./notes.txt ",
  });
  // An image path naming no file: the turn is refused with one clear message (nothing is sent).
  assert.throws(() => userTurn(ctx, "what is ./missing.png"), {
    message: "cannot read image ./missing.png: no such file",
  });
  fs.rmSync(dir, { recursive: true });
});

test("streamAnswer shows thinking first, dimmed on a terminal, then the answer (as Ollama's CLI)", async () => {
  const { streamAnswer } = await import("../../../server/cli/answer.ts");
  const chunks = [
    { model: "m", message: { role: "assistant", content: "", thinking: "Blue light " }, done: false },
    { model: "m", message: { role: "assistant", content: "", thinking: "scatters." }, done: false },
    { model: "m", message: { role: "assistant", content: "Rayleigh." }, done: false },
    { model: "m", message: { role: "assistant", content: "" }, done: true, eval_count: 3 },
  ];
  for (const isTTY of [true, false]) {
    let out = "";
    const ctx = {
      client: {
        chat: async function* () {
          yield* chunks;
        },
      },
      stdout: { isTTY, write: (s: string) => ((out += s), true) },
    } as never;
    const r = await streamAnswer(ctx, { model: "m", messages: [] });
    assert.equal(r.text, "Rayleigh.");
    const [dim, undim] = isTTY ? ["\x1b[2m", "\x1b[22m"] : ["", ""];
    assert.equal(out, `${dim}Thinking...\nBlue light scatters.\n...done thinking.${undim}\n\nRayleigh.`);
  }
});
