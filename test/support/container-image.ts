// The image as `npm run image` builds it (server/setup/image.sh: docker or podman, the offline base where no registry
// answers), once per test process; a warm build is layer-cached (seconds). And the container engine, run the way the
// image scripts run it (podman's settings from server/setup/image/engine.sh), for tests that start containers.
import { execFile, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { promisify } from "node:util";
import type { RealNode } from "../cluster/real-node.ts";
import { REPO } from "./server.ts";

const run = promisify(execFile);
const VERSION = (JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;

export interface ContainerImage {
  /** gantry:<version> */
  image: string;
  /** docker or podman */
  engine: string;
  /** The environment the engine runs with (CONTAINERS_CONF for podman where needed). */
  env: NodeJS.ProcessEnv;
  /** Seconds `npm run image` took in this process. */
  buildSeconds: number;
}

let pending: Promise<ContainerImage> | undefined;

/** Builds (or finds, layer-cached) the CPU image; rejects with the build's output when it fails. */
export function containerImage(): Promise<ContainerImage> {
  return (pending ??= build());
}

async function build(): Promise<ContainerImage> {
  const started = performance.now();
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn("bash", [path.join(REPO, "server", "setup", "image.sh")], {
      cwd: REPO,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let log = "";
    child.stdout.on("data", (d: Buffer) => (log += d.toString()));
    child.stderr.on("data", (d: Buffer) => (log += d.toString()));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(log) : reject(new Error(`npm run image failed (${code}):\n${log.slice(-6000)}`)),
    );
  });
  const engine = /with (docker|podman) from/.exec(out)?.[1];
  if (!engine) throw new Error(`npm run image did not say which engine built it:\n${out.slice(-2000)}`);
  // The same settings image.sh used (engine.sh prints the export when podman needs Gantry's containers.conf).
  const conf = /export CONTAINERS_CONF=(\S+)/.exec(out)?.[1];
  const env = { ...process.env, ...(conf ? { CONTAINERS_CONF: conf } : {}) };
  return { image: `gantry:${VERSION}`, engine, env, buildSeconds: (performance.now() - started) / 1000 };
}

/** Runs the engine with arguments; resolves with stdout, rejects with stderr in the message. */
export async function engineRun(img: ContainerImage, args: string[], timeoutMs = 600_000): Promise<string> {
  try {
    const { stdout } = await run(img.engine, args, { env: img.env, timeout: timeoutMs, maxBuffer: 64 << 20 });
    return stdout;
  } catch (e) {
    const err = e as Error & { stderr?: string; stdout?: string };
    throw new Error(`${img.engine} ${args.join(" ")}: ${err.message}\n${err.stderr ?? ""}${err.stdout ?? ""}`, {
      cause: e,
    });
  }
}

/** Removes containers and volumes by name, ignoring those that do not exist. */
export function engineCleanup(img: ContainerImage, containers: string[], volumes: string[]): void {
  // One at a time: a name that does not exist fails the whole command.
  for (const c of containers) spawnSync(img.engine, ["rm", "-f", c], { env: img.env });
  for (const v of volumes) spawnSync(img.engine, ["volume", "rm", "-f", v], { env: img.env });
}

/**
 * Imports `image` (default: the built image) into the real node's containerd unless this very image (by id) is there
 * already: `save --format oci-archive`, then `ctr images import`.
 */
export async function importIntoNode(img: ContainerImage, node: RealNode, image = img.image): Promise<void> {
  const id = (await engineRun(img, ["image", "inspect", "-f", "{{.Id}}", image])).trim();
  const stamp = path.join(node.dir, `imported-${image.replaceAll(/[^a-zA-Z0-9.-]/g, "_")}`);
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, "utf8") === id) return;
  const archive = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-oci-")), "image.tar");
  try {
    await engineRun(img, ["save", "--format", "oci-archive", "-o", archive, image]);
    await node.importImage(archive, image);
    fs.writeFileSync(stamp, id);
  } finally {
    fs.rmSync(path.dirname(archive), { recursive: true, force: true });
  }
}
