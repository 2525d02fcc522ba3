// The official `ollama` npm client drives the store endpoints, as users' scripts would.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Ollama } from "ollama";
import { tinyModelPath } from "../../support/models.ts";
import { startStoreApp, type StoreApp } from "./store-app.ts";

let app: StoreApp;
let client: Ollama;
before(async () => {
  app = await startStoreApp();
  client = new Ollama({ host: app.url });
});
after(() => app.close());

test("create (streamed), list, show, copy and delete through the ollama client", async () => {
  // ollama-js refuses local paths in `from`, so the base is imported directly and derived through the client.
  await app.store.create({ model: "tiny:base", from: await tinyModelPath() });
  const statuses: string[] = [];
  for await (const p of await client.create({
    model: "tiny:client",
    from: "tiny:base",
    system: "Be kind.",
    parameters: { num_ctx: 256 },
    stream: true,
  })) {
    statuses.push(p.status);
  }
  assert.equal(statuses.at(-1), "success");

  const listed = await client.list();
  assert.deepEqual(listed.models.map((m) => m.name).sort(), ["tiny:base", "tiny:client"]);
  assert.ok(listed.models.every((m) => m.details.family === "llama"));

  const shown = await client.show({ model: "tiny:client" });
  assert.equal(shown.system, "Be kind.");
  assert.match(shown.parameters, /^num_ctx\s+256$/);
  assert.equal(shown.details.format, "gguf");
  assert.deepEqual(shown.capabilities, ["completion"]);

  await client.copy({ source: "tiny:client", destination: "tiny:client-copy" });
  await client.delete({ model: "tiny:client" }); // the client sends {"name": ...}
  assert.deepEqual((await client.list()).models.map((m) => m.name).sort(), ["tiny:base", "tiny:client-copy"]);

  await assert.rejects(
    client.show({ model: "tiny:client" }),
    (e: unknown) => (e as { status_code?: number }).status_code === 404,
  );
  await assert.rejects(
    client.create({ model: "x", from: "no-such-base", stream: false }),
    (e: unknown) => (e as { status_code?: number }).status_code === 404,
  );
});
