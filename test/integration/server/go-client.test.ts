// Every /api route through Ollama's Go client (test/go-client: github.com/ollama/ollama/api, pinned), against a real
// `gantry serve` with SmolLM2-135M and a hub stand-in to pull from. The Go client sends Go's zero values where its
// structs have no `omitempty` ("" for unset strings, null maps and slices); the program also sends them on purpose.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { runGoClient } from "../../support/go-client.ts";
import { smollm2Path, tinyModelPath } from "../../support/models.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

let hub: HubServer;
let srv: TestServer;

before(async () => {
  hub = await startHubServer();
  await hub.register({ org: "acme", repo: "Tiny-GGUF", files: { "tiny-Q8_0.gguf": await tinyModelPath() } });
  srv = await startTestServer({
    env: { GANTRY_HUB_URL: hub.url, GANTRY_KEEP_ALIVE: "1h", GANTRY_CONTEXT_LENGTH: "512" },
  });
});
after(async () => {
  await srv?.stop();
  await hub?.close();
});

test("Ollama's Go client: every /api route, Go's zero values, nothing a 500", async (t) => {
  const { code, out } = await runGoClient([
    "-host",
    srv.url,
    "-gguf",
    await smollm2Path(),
    "-pull",
    "hf.co/acme/Tiny-GGUF:Q8_0",
  ]);
  t.diagnostic(out);
  assert.equal(code, 0, out);
  const lines = out.trim().split("\n");
  assert.ok(lines.length >= 30 && lines.every((l) => l.startsWith("ok ")), out);
  assert.doesNotMatch(srv.logs(), /"level":50/, "no error logged");
});
