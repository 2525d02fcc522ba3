// Pull throughput from the local hub against `curl -o` downloading the same file from the same hub, side by side in
// interleaved rounds. Both clients are separate processes; the hub runs here. A pull's time runs from its first
// progress line ("pulling manifest") to "success", so it includes listing, sha256 verification and the manifest
// write, and excludes Node's start-up; curl's is its process wall time. Also runnable: `node test/bench/pull.ts`.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startHubServer } from "../support/hub-server.ts";
import { benchModelPath } from "../support/models.ts";
import { median } from "./table.ts";

export interface Row {
  /** Client and link, e.g. "gantry pull (4 parallel parts), 40 MB/s per connection". */
  name: string;
  /** Median throughput over the rounds, MB/s (10^6 bytes). */
  mbPerSec: number;
  /** Median seconds per download. */
  seconds: number;
  /** Throughput relative to curl's median. */
  vsCurl: number;
  rounds: number;
  megabytes: number;
}

const PULL_CLI = path.resolve(import.meta.dirname, "../support/pull-cli.ts");
const FILE = "bench-250m-Q8_0.gguf";

/** Seconds of one pull in a child process, timed from its first progress line to "success". */
function timePull(hubUrl: string, tuning: object): Promise<number> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bench-pull-"));
  return new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, [PULL_CLI, root, hubUrl, "hf.co/bench/model:Q8_0", JSON.stringify(tuning)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let buf = "",
      t0 = 0,
      t1 = 0;
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = JSON.parse(buf.slice(0, nl)) as { status?: string; error?: string };
        buf = buf.slice(nl + 1);
        if (line.status === "pulling manifest") t0 = performance.now();
        if (line.status === "success") t1 = performance.now();
        if (line.error) reject(new Error(line.error));
      }
    });
    child.once("exit", (code) =>
      code === 0 && t1 > t0 ? resolve((t1 - t0) / 1000) : reject(new Error(`pull exited with ${code}`)),
    );
  }).finally(() => fs.rmSync(root, { recursive: true, force: true }));
}

/** Runs a command to completion. */
function run(cmd: string, args: string[]): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "inherit"] });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}`))));
  });
}

/**
 * Seconds of `curl -sf -L -o <file> <url>`, and with `verify` of `sha256sum <file>` after it (what a pull includes).
 */
async function timeCurl(url: string, verify = false): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bench-curl-"));
  const file = path.join(dir, "model.gguf");
  try {
    const t0 = performance.now();
    await run("curl", ["-sf", "-L", "-o", file, url]);
    if (verify) await run("sha256sum", [file]);
    return (performance.now() - t0) / 1000;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A 40 MB/s cap per connection, as CDNs impose on single connections: where parallel parts pay off. */
const CAPPED_BYTES_PER_SECOND = 40e6;

export async function benchPull(opts: { rounds?: number; cappedRounds?: number } = {}): Promise<Row[]> {
  const file = await benchModelPath("250m");
  const bytes = fs.statSync(file).size;
  const hub = await startHubServer();
  try {
    await hub.register({ org: "bench", repo: "model", files: { [FILE]: file } });
    const curl = { name: "curl -o", run: () => timeCurl(`${hub.url}/bench/model/resolve/main/${FILE}`) };
    const curlVerified = {
      name: "curl -o && sha256sum (verified, as a pull is)",
      run: () => timeCurl(`${hub.url}/bench/model/resolve/main/${FILE}`, true),
    };
    const parallel = { name: "gantry pull (4 parallel parts)", run: () => timePull(hub.url, { maxParts: 4 }) };
    const single = {
      name: "gantry pull (1 part)",
      run: () => timePull(hub.url, { parallelThreshold: Number.MAX_SAFE_INTEGER }),
    };
    const rows = await compare("full speed", [curl, curlVerified, parallel, single], opts.rounds ?? 3, bytes);
    hub.fault("bench", "model", FILE, { bytesPerSecond: CAPPED_BYTES_PER_SECOND });
    rows.push(
      ...(await compare(
        `${CAPPED_BYTES_PER_SECOND / 1e6} MB/s per connection`,
        [curl, parallel],
        opts.cappedRounds ?? 2,
        bytes,
      )),
    );
    return rows;
  } finally {
    await hub.close();
  }
}

/** Interleaved rounds of each client; rows relative to the first client (curl). */
async function compare(
  link: string,
  clients: Array<{ name: string; run: () => Promise<number> }>,
  rounds: number,
  bytes: number,
): Promise<Row[]> {
  const times = clients.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    for (const [i, c] of clients.entries()) times[i]!.push(await c.run());
  }
  const mbps = (s: number) => bytes / 1e6 / s;
  const baseline = mbps(median(times[0]!));
  return clients.map((c, i) => {
    const seconds = median(times[i]!);
    return {
      name: `${c.name}, ${link}`,
      mbPerSec: mbps(seconds),
      seconds,
      vsCurl: mbps(seconds) / baseline,
      rounds,
      megabytes: bytes / 1e6,
    };
  });
}

if (import.meta.main) {
  const { printTable } = await import("./table.ts");
  const rows = await benchPull();
  printTable(
    "pull throughput (local hub)",
    ["client", "MB/s", "s", "vs curl", "rounds", "MB"],
    rows.map((r) => [r.name, r.mbPerSec, r.seconds, r.vsCurl, r.rounds, r.megabytes]),
  );
}
