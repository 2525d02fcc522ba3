// Pulls through a misbehaving hub: connections cut mid-file, stalls, corrupt bytes, and a puller process killed with
// SIGKILL. The final blob must always be exactly the hub's file, resumed rather than downloaded again.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { AppError } from "../../../server/common/errors.ts";
import { pullModel } from "../../../server/hub/pull.ts";
import { completedBytes, SidecarSchema } from "../../../server/hub/sidecar.ts";
import { parseModelName } from "../../../server/common/model-name.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { smollm2Path, tinyModelPath } from "../../support/models.ts";
import { blobFiles, FAST, progressLog, sha256File, tempStore } from "./helpers.ts";

const PULL_CLI = path.resolve(import.meta.dirname, "../../support/pull-cli.ts");
const FILE = "SmolLM2-135M-Instruct-Q4_K_M.gguf";
const TINY = "tiny-Q4_K_M.gguf";

/** Start offsets of the ranged requests for a file. */
const rangeStarts = (hub: HubServer, file: string): number[] =>
  hub
    .downloads(file)
    .filter((r) => r.range)
    .map((r) => Number(/^bytes=(\d+)-/.exec(r.range!)![1]));

describe("hub pulls: interrupted, stalled and corrupt downloads", () => {
  let hub: HubServer;
  let smol: string, tiny: string, smolSha: string, smolSize: number;

  before(async () => {
    hub = await startHubServer();
    [smol, tiny] = await Promise.all([smollm2Path(), tinyModelPath({ seed: 6 })]);
    smolSha = await sha256File(smol);
    smolSize = fs.statSync(smol).size;
    await hub.register({ org: "HuggingFaceTB", repo: "SmolLM2-135M-Instruct-GGUF", files: { [FILE]: smol } });
    await hub.register({ org: "acme", repo: "tiny", files: { [TINY]: tiny } });
  });
  after(() => hub.close());

  it("resumes a cut connection with a Range request and stores the exact file (SmolLM2, one part)", async () => {
    const store = tempStore();
    hub.resetLog();
    hub.fault("HuggingFaceTB", "SmolLM2-135M-Instruct-GGUF", FILE, { cutAfterBytes: 10 << 20 });
    await pullModel("hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", {
      store,
      hubUrl: hub.url,
      tuning: { ...FAST, parallelThreshold: Infinity },
    });
    const starts = rangeStarts(hub, FILE);
    assert.equal(starts.length, 1, "one resume request");
    assert.ok(starts[0]! > 0 && starts[0]! <= 10 << 20, `resumed from ${starts[0]}`);
    assert.ok(hub.bytesServed(FILE) < smolSize + (10 << 20) + 1, "the file was not downloaded again from the start");
    const spec = await store.resolve("hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF");
    assert.equal(await sha256File(spec.modelPath), smolSha);
    assert.deepEqual(
      blobFiles(store).filter((f) => f.includes("partial")),
      [],
      "no partial file left behind",
    );
  });

  it("downloads a large file as parallel ranges and resumes the parts that were cut", async () => {
    const store = tempStore();
    hub.resetLog();
    hub.fault("HuggingFaceTB", "SmolLM2-135M-Instruct-GGUF", FILE, { cutAfterBytes: 3 << 20, times: 2 });
    await pullModel("hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", {
      store,
      hubUrl: hub.url,
      tuning: { ...FAST, parallelThreshold: 8 << 20, maxParts: 4 },
    });
    const starts = rangeStarts(hub, FILE);
    assert.equal(starts.length, 6, "4 parts + 2 resumes");
    assert.equal(hub.downloads(FILE).filter((r) => r.status !== 206).length, 0, "every download was a range");
    assert.ok(hub.bytesServed(FILE) <= smolSize + 2 * (3 << 20));
    assert.equal(
      await sha256File((await store.resolve("hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF")).modelPath),
      smolSha,
    );
  });

  it("starts over when a resume is answered with the whole file, and falls back to one part when ranges are ignored", async () => {
    const size = fs.statSync(tiny).size;
    for (const tuning of [FAST, { ...FAST, parallelThreshold: 100_000, maxParts: 4 }]) {
      const store = tempStore();
      hub.resetLog();
      hub.fault("acme", "tiny", TINY, { cutAfterBytes: 200_000, ignoreRange: true });
      try {
        await pullModel("hf.co/acme/tiny", { store, hubUrl: hub.url, tuning });
      } finally {
        hub.fault("acme", "tiny", TINY, null);
      }
      assert.ok(hub.downloads(TINY).every((r) => r.status === 200));
      assert.equal(hub.downloads(TINY).at(-1)!.bytes, size, "the last response carried the whole file");
      assert.equal(await sha256File((await store.resolve("hf.co/acme/tiny")).modelPath), await sha256File(tiny));
    }
  });

  it("notices a stalled connection, retries it, and never reports progress going backwards", async () => {
    const store = tempStore();
    hub.resetLog();
    hub.fault("acme", "tiny", TINY, { stallAfterBytes: 300_000 });
    const log = progressLog();
    await pullModel("hf.co/acme/tiny", { store, hubUrl: hub.url, onProgress: log.push, tuning: FAST });
    assert.deepEqual(rangeStarts(hub, TINY), [300_000]);
    const completed = log.lines.filter((p) => p.completed !== undefined).map((p) => p.completed!);
    assert.deepEqual(
      completed,
      [...completed].sort((a, b) => a - b),
    );
    assert.equal(completed.at(-1), fs.statSync(tiny).size);
    assert.equal(await sha256File((await store.resolve("hf.co/acme/tiny")).modelPath), await sha256File(tiny));
  });

  it("rejects corrupt data: a digest mismatch error, nothing under the final name, no partial data left", async () => {
    const store = tempStore();
    const sha = await sha256File(tiny);
    hub.fault("acme", "tiny", TINY, { corrupt: true });
    try {
      await assert.rejects(pullModel("hf.co/acme/tiny", { store, hubUrl: hub.url, tuning: FAST }), (e: unknown) => {
        assert.ok(e instanceof AppError && e.code === "STORE_DIGEST_MISMATCH", String(e));
        assert.match(e.message, new RegExp(`${TINY} in hf\\.co/acme/tiny`));
        assert.match(e.message, new RegExp(`sha256:${sha}`));
        assert.match(e.message, /the downloaded data is sha256:[0-9a-f]{64}/);
        return true;
      });
    } finally {
      hub.fault("acme", "tiny", TINY, null);
    }
    assert.deepEqual(blobFiles(store), []);
    assert.equal(await store.manifests.read(parseModelName("hf.co/acme/tiny")), null);
    await pullModel("hf.co/acme/tiny", { store, hubUrl: hub.url, tuning: FAST });
    assert.equal(await sha256File(store.blobs.path(`sha256:${sha}`)), sha);
  });

  it("resumes in a new process after the puller was killed with SIGKILL mid-download", async () => {
    const store = tempStore();
    const partialInfo = path.join(store.blobs.dir, `sha256-${smolSha}-partial.json`);
    const run = () => {
      const child = spawn(
        process.execPath,
        [PULL_CLI, store.root, hub.url, "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.stderr.on("data", (d: Buffer) => {
        out += d.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      return { child, exited, output: () => out };
    };

    hub.resetLog();
    hub.fault("HuggingFaceTB", "SmolLM2-135M-Instruct-GGUF", FILE, { stallAfterBytes: 8 << 20 });
    const first = run();
    // Three of the four parts finish; the stalled one holds 8 MiB. Wait until the sidecar records that, then kill.
    const partSize = Math.ceil(smolSize / 4);
    let recorded = 0;
    for (const deadline = Date.now() + 60_000; recorded < 3 * partSize + (8 << 20) && Date.now() < deadline;) {
      await sleep(100);
      try {
        recorded = completedBytes(SidecarSchema.parse(JSON.parse(fs.readFileSync(partialInfo, "utf8"))).parts);
      } catch {
        /* not written yet */
      }
    }
    assert.ok(recorded >= 3 * partSize + (8 << 20), `sidecar recorded ${recorded} bytes:\n${first.output()}`);
    first.child.kill("SIGKILL");
    assert.equal(await first.exited, null);
    const servedBefore = hub.bytesServed(FILE);
    assert.ok(!fs.existsSync(store.blobs.path(`sha256:${smolSha}`)), "nothing stored under the final name yet");

    hub.resetLog();
    const second = run();
    assert.equal(await second.exited, 0, second.output());
    const servedAfter = hub.bytesServed(FILE);
    assert.ok(
      servedAfter <= smolSize - recorded,
      `second run fetched ${servedAfter} bytes, ${smolSize - recorded} were missing`,
    );
    assert.ok(servedAfter > 0 && servedBefore + servedAfter >= smolSize);
    assert.ok(
      hub.downloads(FILE).every((r) => r.status === 206),
      "the second run only sent range requests",
    );
    assert.equal(await sha256File(store.blobs.path(`sha256:${smolSha}`)), smolSha);
    assert.deepEqual(
      blobFiles(store).filter((f) => f.includes("partial")),
      [],
    );
    assert.ok(await store.resolve("hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"));
  });
});
