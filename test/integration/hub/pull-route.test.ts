// POST /api/pull over real HTTP: the ollama npm client's pull, error statuses and messages, private repos, and
// concurrent pulls that share one download (also when one client leaves).
import assert from "node:assert/strict";
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import type http from "node:http";
import { after, before, describe, it } from "node:test";
import express from "express";
import { Ollama } from "ollama";
import { silentLogger } from "../../../server/common/logger.ts";
import { pullRoutes } from "../../../server/http/routes/pull.ts";
import { errorMiddleware } from "../../../server/http/errors.ts";
import { completedBytes, SidecarSchema } from "../../../server/hub/sidecar.ts";
import type { ModelStore } from "../../../server/store/model-store.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { smollm2Path, tinyModelPath } from "../../support/models.ts";
import { FAST, sha256File, tempStore } from "./helpers.ts";

const SMOL = "SmolLM2-135M-Instruct-Q4_K_M.gguf";
const SEQUENTIAL = { ...FAST, parallelThreshold: Infinity };

async function startApp(
  store: ModelStore,
  hubUrl: string,
  token?: string,
): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.use(express.json({ type: () => true, strict: false }));
  app.use("/api", pullRoutes({ store, logger: silentLogger, hub: { url: hubUrl, token }, tuning: SEQUENTIAL }));
  app.use(errorMiddleware("ollama", silentLogger));
  const server: http.Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const post = (url: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${url}/api/pull`, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "Content-Type": "application/json" },
    ...(signal ? { signal } : {}),
  });

/** Reads NDJSON lines of a streaming response, calling `onLine` for each; returns them all. */
async function readLines(
  res: Response,
  onLine: (l: Record<string, unknown>) => void = () => {},
): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  let buf = "";
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    buf += Buffer.from(chunk).toString();
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      lines.push(line);
      onLine(line);
    }
  }
  return lines;
}

describe("POST /api/pull", () => {
  let hub: HubServer;
  let smol: string, smolSize: number, smolSha: string;

  before(async () => {
    hub = await startHubServer();
    smol = await smollm2Path();
    smolSize = fs.statSync(smol).size;
    smolSha = await sha256File(smol);
    const tiny = await tinyModelPath({ seed: 8 });
    await hub.register({ org: "HuggingFaceTB", repo: "SmolLM2-135M-Instruct-GGUF", files: { [SMOL]: smol } });
    await hub.register({ org: "acme", repo: "tiny", files: { "tiny-Q4_K_M.gguf": tiny, "tiny-Q8_0.gguf": tiny } });
    await hub.register({ org: "acme", repo: "private", files: { "p-Q4_K_M.gguf": tiny }, token: "hf_secret" });
  });
  after(() => hub.close());

  it("streams Ollama's progress lines to the ollama client, and answers one success line with stream:false", async () => {
    const app = await startApp(tempStore(), hub.url);
    try {
      const client = new Ollama({ host: app.url });
      const statuses: string[] = [];
      let last = { completed: 0, total: 0 };
      for await (const p of await client.pull({
        model: "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M",
        stream: true,
      })) {
        statuses.push(p.status);
        if (p.digest) last = { completed: p.completed, total: p.total };
      }
      assert.equal(statuses[0], "pulling manifest");
      assert.equal(statuses[1], `pulling ${smolSha.slice(0, 12)}`);
      assert.deepEqual(statuses.slice(-3), ["verifying sha256 digest", "writing manifest", "success"]);
      assert.deepEqual(last, { completed: smolSize, total: smolSize });

      const res = await post(app.url, { name: "hf.co/acme/tiny", stream: false });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: "success" });
    } finally {
      await app.close();
    }
  });

  it("answers hub errors with their status and a message naming the repo or file", async () => {
    const app = await startApp(tempStore(), hub.url);
    try {
      const cases: Array<[unknown, number, RegExp]> = [
        [{ model: "hf.co/nobody/nothing" }, 404, /^repository hf\.co\/nobody\/nothing not found on the hub$/],
        [
          { model: "hf.co/acme/tiny:Q5_K_S" },
          404,
          /^quant Q5_K_S not found in hf\.co\/acme\/tiny; available quants: Q4_K_M, Q8_0$/,
        ],
        [
          { model: "hf.co/acme/tiny:other.gguf", stream: false },
          404,
          /^file other\.gguf not found in hf\.co\/acme\/tiny/,
        ],
        [{ model: "hf.co/acme/private" }, 401, /repository hf\.co\/acme\/private.*HF_TOKEN/],
        [{ model: "hf.co/acme" }, 400, /invalid hub reference "hf\.co\/acme"/],
        [{ model: "smollm2:135m" }, 400, /only hub models can be pulled/],
        [{}, 400, /model is required/],
      ];
      for (const [body, status, message] of cases) {
        const res = await post(app.url, body);
        assert.equal(res.status, status, JSON.stringify(body));
        assert.match(((await res.json()) as { error: string }).error, message);
      }
      const client = new Ollama({ host: app.url });
      await assert.rejects(
        client.pull({ model: "hf.co/nobody/nothing" }),
        (e: Error & { status_code?: number }) => e.status_code === 404 && /not found/.test(e.message),
      );
    } finally {
      await app.close();
    }
  });

  it("sends HF_TOKEN to the hub for private repos", async () => {
    const app = await startApp(tempStore(), hub.url, "hf_secret");
    try {
      hub.resetLog();
      const res = await post(app.url, { model: "hf.co/acme/private", stream: false });
      assert.deepEqual(await res.json(), { status: "success" });
      assert.ok(
        hub.requests.filter((r) => !r.url.startsWith("/cdn/")).every((r) => r.authorization === "Bearer hf_secret"),
      );
    } finally {
      await app.close();
    }
  });

  it("shares one download between two concurrent pulls, even after one client leaves", async () => {
    const store = tempStore();
    const app = await startApp(store, hub.url);
    try {
      hub.resetLog();
      // The first response stalls after 20 MiB for a second (then resumes), so the pulls surely overlap.
      hub.fault("HuggingFaceTB", "SmolLM2-135M-Instruct-GGUF", SMOL, { stallAfterBytes: 20 << 20 });
      const leaver = new AbortController();
      const started = Promise.withResolvers<void>();
      const a = post(app.url, { model: "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M" }, leaver.signal)
        .then((res) =>
          readLines(res, (l) => {
            if (typeof l.completed === "number" && l.completed > 0) started.resolve();
          }),
        )
        .catch((e: unknown) => (leaver.signal.aborted ? "left" : Promise.reject(e)));
      await started.promise;
      const b = post(app.url, { model: "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:q4_k_m" }).then((res) =>
        readLines(res),
      );
      await new Promise((r) => setTimeout(r, 200));
      leaver.abort();
      assert.equal(await a, "left");
      const linesB = await b;
      assert.equal(linesB.at(-1)!.status, "success");
      assert.ok(
        linesB.some(
          (l) => l.digest === `sha256:${smolSha}` && (l.completed as number) > 0 && (l.completed as number) < smolSize,
        ),
        "B watched the shared download's progress",
      );
      assert.equal(hub.bytesServed(SMOL), smolSize, "the hub sent the file once");
      assert.equal(await sha256File(store.blobs.path(`sha256:${smolSha}`)), smolSha);
    } finally {
      await app.close();
    }
  });

  it("cancels an unshared download when its client leaves, keeping the partial file for the next pull to resume", async () => {
    const store = tempStore();
    const app = await startApp(store, hub.url);
    try {
      hub.resetLog();
      hub.fault("HuggingFaceTB", "SmolLM2-135M-Instruct-GGUF", SMOL, { stallAfterBytes: 12 << 20, times: 1 });
      const leaver = new AbortController();
      const res = await post(app.url, { model: "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF" }, leaver.signal);
      await readLines(res, (l) => {
        if ((l.completed as number) >= 12 << 20) leaver.abort();
      }).catch(() => {});
      const sidecar = `${store.blobs.path(`sha256:${smolSha}`)}-partial.json`;
      let kept = 0;
      for (const deadline = Date.now() + 5000; kept < 12 << 20 && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 50));
        try {
          kept = completedBytes(SidecarSchema.parse(JSON.parse(fs.readFileSync(sidecar, "utf8"))).parts);
        } catch {
          /* not yet */
        }
      }
      assert.equal(kept, 12 << 20, "the partial download was kept");
      // longer than the stall timeout: a live download would have retried
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(hub.downloads(SMOL).length, 1, "no retry after the client left");
      assert.equal(fs.existsSync(store.blobs.path(`sha256:${smolSha}`)), false);

      hub.resetLog();
      const again = await post(app.url, { model: "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", stream: false });
      assert.deepEqual(await again.json(), { status: "success" });
      assert.deepEqual(
        hub.downloads(SMOL).map((r) => r.range),
        [`bytes=${12 << 20}-${smolSize - 1}`],
      );
      assert.equal(await sha256File(store.blobs.path(`sha256:${smolSha}`)), smolSha);
    } finally {
      await app.close();
    }
  });
});
