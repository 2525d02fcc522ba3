// The package as users get it: `npm pack` of this checkout (its prepack builds dist/), installed with
// `npm install -g --prefix <dir> <tarball>` — the registry's dependencies, the built JavaScript, the `gantry` bin.
// One install per tarball content and checkout, in $GANTRY_CACHE/installed-gantry/<checkout>/<tarball sha256>: the
// tarball is packed afresh on every call, so any change to the package installs anew, and the test files of one run
// share the install (about 40 s with a warm npm cache) instead of repeating it. Older installs of the checkout are
// removed. The installed CLI finds the patched engine that setup built in the shared $GANTRY_CACHE (its cache key is
// node-llama-cpp's version, the platform and the patch's hash, all the same in the tarball), so nothing is rebuilt.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { withDirLock } from "../../server/common/dir-lock.ts";
import { REPO } from "./server.ts";

const run = promisify(execFile);

export interface InstalledGantry {
  tarball: string;
  /** The npm prefix: bin/gantry, lib/node_modules/gantry. */
  prefix: string;
  bin: string;
  packageDir: string;
  /** Whether this call installed it (false: an install of the same tarball was reused). */
  fresh: boolean;
}

const gantryCache = (): string => process.env.GANTRY_CACHE || path.join(os.homedir(), ".cache", "gantry");
const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

let pending: Promise<InstalledGantry> | undefined;

/** Packs this checkout and installs the tarball (or reuses the install of an identical tarball). */
export function installedGantry(): Promise<InstalledGantry> {
  pending ??= install();
  return pending;
}

async function install(): Promise<InstalledGantry> {
  const packDir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-pack-"));
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", packDir], {
    cwd: REPO,
    maxBuffer: 64 << 20,
  });
  const [{ filename }] = JSON.parse(stdout.slice(stdout.indexOf("["))) as [{ filename: string }];
  const tarball = path.join(packDir, filename);
  const home = path.join(gantryCache(), "installed-gantry", sha256(REPO).slice(0, 12));
  const prefix = path.join(home, sha256(fs.readFileSync(tarball)).slice(0, 16));
  const result = (fresh: boolean): InstalledGantry => ({
    tarball,
    prefix,
    bin: path.join(prefix, "bin", "gantry"),
    packageDir: path.join(prefix, "lib", "node_modules", "gantry"),
    fresh,
  });
  fs.mkdirSync(home, { recursive: true });
  return withDirLock(`${home}.lock`, async () => {
    if (fs.existsSync(path.join(prefix, ".installed"))) return result(false);
    // A partial install (a crashed run) is removed first; the marker is written only once npm succeeded.
    fs.rmSync(prefix, { recursive: true, force: true });
    await run(
      "npm",
      ["install", "--global", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=error", tarball],
      { maxBuffer: 64 << 20, env: { ...process.env, npm_config_update_notifier: "false" } },
    );
    fs.writeFileSync(path.join(prefix, ".installed"), new Date().toISOString());
    for (const old of fs.readdirSync(home))
      if (path.join(home, old) !== prefix) fs.rmSync(path.join(home, old), { recursive: true, force: true });
    return result(true);
  });
}
