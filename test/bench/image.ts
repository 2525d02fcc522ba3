// `npm run bench image`: the container image's figures. Build time (warm: nothing changed; after a code change: a
// touched server file, which rebuilds the package layers and not the dependencies or the engine; cold with
// GANTRY_BENCH_IMAGE_COLD=1: every Dockerfile layer again, `--no-cache`, the bases kept), the image's size and what
// Gantry adds over its Node base (/app and the engine cache), and the container's cold start to its first token with
// the model already in its volume (`run -d` to the first streamed token of /api/chat, median of the rounds), and the
// same app's first token as a real pod against a process pod (image-pods.ts). GANTRY_BENCH_IMAGE_PARTS picks parts:
// a comma list of build, size, start, pods (default all), so that a figure can be taken alone on a quiet machine.
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { containerImage, engineCleanup, engineRun } from "../support/container-image.ts";
import { startHubServer } from "../support/hub-server.ts";
import { smollm2Path } from "../support/models.ts";
import { freePort, REPO } from "../support/server.ts";
import { median } from "./table.ts";

const sh = promisify(execFile);
const MODEL = "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M";

export interface ImageFigures {
  rows: Array<[string, string]>;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

async function timeImageBuild(env: NodeJS.ProcessEnv): Promise<number> {
  const t = performance.now();
  await sh("bash", [path.join(REPO, "server", "setup", "image.sh")], { env, maxBuffer: 64 << 20 });
  return performance.now() - t;
}

/** ms from `run -d` to the first token of a streamed /api/chat. */
async function coldStart(img: Img, volume: string, name: string): Promise<number> {
  const port = await freePort();
  const t = performance.now();
  await engineRun(img, [
    "run",
    "-d",
    "-v",
    `${volume}:/models`,
    "-p",
    `127.0.0.1:${port}:11434`,
    "--name",
    name,
    img.image,
  ]);
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/api/chat`, {
      method: "POST",
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Hi" }], options: { num_predict: 4 } }),
    }).catch(() => undefined);
    if (res?.ok && res.body) {
      const reader = res.body.getReader();
      await reader.read();
      const ms = performance.now() - t;
      await reader.cancel();
      return ms;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

const PARTS = ["build", "size", "start", "pods"] as const;
type Part = (typeof PARTS)[number];

/** GANTRY_BENCH_IMAGE_PARTS: the parts asked for, all when unset. Pure. */
export function imageParts(env: string | undefined): Set<Part> {
  const asked = (env ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  const bad = asked.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (bad.length) throw new Error(`GANTRY_BENCH_IMAGE_PARTS: unknown ${bad.join(", ")} (parts: ${PARTS.join(", ")})`);
  return new Set(asked.length ? (asked as Part[]) : PARTS);
}

export async function benchImage(rounds: number, parts = imageParts(undefined)): Promise<ImageFigures> {
  const rows: Array<[string, string]> = [];
  const report = (row: [string, string]) => {
    rows.push(row);
    console.log(`image: ${row[0]}: ${row[1]}`);
  };
  const first = performance.now();
  const img = await containerImage();
  report(["npm run image, first in this run (warm when the layers are cached)", seconds(performance.now() - first)]);
  if (parts.has("build")) await buildFigures(img, report);
  if (parts.has("size")) await sizeFigures(img, report);
  if (parts.has("start")) await startFigures(img, rounds, report);
  if (parts.has("pods")) {
    const { benchImagePods } = await import("./image-pods.ts");
    await benchImagePods(rounds, report);
  }
  return { rows };
}

type Img = Awaited<ReturnType<typeof containerImage>>;
type Report = (row: [string, string]) => void;

async function buildFigures(img: Img, report: Report): Promise<void> {
  report(["npm run image, nothing changed", seconds(await timeImageBuild(img.env))]);
  const touched = path.join(REPO, "server", "common", "version.ts");
  const original = fs.readFileSync(touched, "utf8");
  try {
    fs.writeFileSync(touched, `${original}// bench ${Date.now()}\n`);
    report(["npm run image, after a code change (server/common/version.ts)", seconds(await timeImageBuild(img.env))]);
  } finally {
    fs.writeFileSync(touched, original);
  }
  if (process.env.GANTRY_BENCH_IMAGE_COLD === "1") {
    const t = performance.now();
    await engineRun(img, ["build", "--no-cache", "--target", "cpu", "-t", `${img.image}-cold`, REPO], 3_600_000);
    report(["cold build (--no-cache, bases present)", seconds(performance.now() - t)]);
    engineCleanup(img, [], []);
    await engineRun(img, ["rmi", `${img.image}-cold`]).catch(() => "");
  }
}

async function sizeFigures(img: Img, report: Report): Promise<void> {
  const size = (ref: string) =>
    engineRun(img, ["image", "inspect", "-f", "{{.Size}}", ref]).then((s) => Number(s.trim()));
  const nodeBase = /^ARG NODE_IMAGE=(\S+)$/m.exec(fs.readFileSync(path.join(REPO, "Dockerfile"), "utf8"))![1]!;
  const [total, base] = [await size(img.image), await size(nodeBase)];
  const du = await engineRun(img, [
    "run",
    "--rm",
    "--entrypoint",
    "du",
    img.image,
    "-sm",
    "/app",
    "/app/node_modules",
    "/opt/gantry/cache",
  ]);
  const mb = Object.fromEntries(
    du
      .trim()
      .split("\n")
      .map((l) => l.split("\t").reverse() as [string, string]),
  );
  report(["image size", `${Math.round(total / 1e6)} MB (Node base ${Math.round(base / 1e6)} MB)`]);
  report([
    "Gantry over the base: /app + engine cache",
    `${Number(mb["/app"]) + Number(mb["/opt/gantry/cache"])} MiB (/app ${mb["/app"]}, engine ${mb["/opt/gantry/cache"]})`,
  ]);
}

async function startFigures(img: Img, rounds: number, report: Report): Promise<void> {
  const hub = await startHubServer({ host: "0.0.0.0" });
  const volume = `gantry-bench-${process.pid}`;
  const names: string[] = [];
  try {
    await hub.register({
      org: "bartowski",
      repo: "SmolLM2-135M-Instruct-GGUF",
      files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await smollm2Path() },
    });
    // The model into the volume as a user puts it there: the server container, then `exec gantry pull`.
    const puller = `gantry-bench-${process.pid}-pull`;
    names.push(puller);
    await engineRun(img, [
      "run",
      "-d",
      "-v",
      `${volume}:/models`,
      "-e",
      `GANTRY_HUB_URL=http://host.containers.internal:${hub.port}`,
      "--name",
      puller,
      img.image,
    ]);
    for (let i = 0; ; i++) {
      try {
        await engineRun(img, ["exec", puller, "gantry", "pull", MODEL]);
        break;
      } catch (e) {
        if (i > 100) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    engineCleanup(img, [puller], []);
    const starts: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const name = `gantry-bench-${process.pid}-${i}`;
      names.push(name);
      starts.push(await coldStart(img, volume, name));
      engineCleanup(img, [name], []);
    }
    report([
      `container cold start to first token, model in the volume (median of ${rounds}; aim ≤ 10 s)`,
      `${seconds(median(starts))} (${starts.map((s) => (s / 1000).toFixed(1)).join(", ")})`,
    ]);
  } finally {
    engineCleanup(img, names, [volume]);
    await hub.close();
  }
}
