// `gantry` as users install it: the packed tarball installed with `npm install -g --prefix` (test/support/
// installed-gantry.ts), run through its bin with Node 24: --version, `gantry serve` + `gantry run <tiny model> "hi"`,
// the engine's first use (the shared patched build, or the prebuilt binary said once when there is no compiler),
// app files importing from "gantry" (with their errors) and their types; and bin/gantry from a checkout, silent.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { patchedBuild, readBuildStatus } from "../../../server/engine/native/patched-build.ts";
import { VERSION } from "../../../server/common/version.ts";
import { testEngineBuild } from "../../support/engine-build.ts";
import { installedGantry, type InstalledGantry } from "../../support/installed-gantry.ts";
import { tinyModelPath } from "../../support/models.ts";
import { PROJECT_KINDS, userProject } from "../../support/user-project.ts";
import { freePort, REPO, startTestServer, type TestServer } from "../../support/server.ts";
import { runCli, type CliResult } from "../cli/run-cli.ts";

let gantry: InstalledGantry, work: string;
const servers: TestServer[] = [];

before(async () => {
  gantry = await installedGantry();
  work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-installed-"));
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  fs.rmSync(work, { recursive: true, force: true });
});

/** The installed `gantry`, with Node 24 on PATH (as a user's shell has it) and its bin directory first. */
const userPath = () => [path.dirname(gantry.bin), path.dirname(process.execPath), process.env.PATH].join(":");
const gantryCli = (args: string[], env: Record<string, string> = {}, cwd = work): Promise<CliResult> =>
  runCli(args, { bin: gantry.bin, cwd, env: { PATH: userPath(), ...env } });

test("the tarball holds the built package, the engine patch and its build step, and nothing of test/", () => {
  const files = execFileSync("tar", ["tzf", gantry.tarball], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ""));
  for (const f of [
    "package.json",
    "dist/server/cli/gantry.js",
    "dist/server/index.js",
    "dist/server/index.d.ts",
    "dist/server/engine/native/node-llama-cpp-addon.patch",
    "dist/server/setup/engine-build.js",
    "dist/server/setup/llama-source.js",
    "dist/console/index.html",
    "dist/console/index.html.br",
    "dist/console/manifest.json",
  ])
    assert.ok(files.includes(f), `${f} is packed`);
  // The console's built assets (npm run build): hashed, with their precompressed forms; no browser sources.
  for (const re of [
    /^dist\/console\/assets\/main-\w+\.js$/,
    /^dist\/console\/assets\/main-\w+\.js\.br$/,
    /^dist\/console\/assets\/main-\w+\.css\.gz$/,
  ])
    assert.ok(
      files.some((f) => re.test(f)),
      `${re} is packed`,
    );
  assert.deepEqual(
    files.filter((f) => f.startsWith("dist/server/browser-console/") || f.endsWith(".tsx")),
    [],
    "the console's sources stay out",
  );
  // The installed gateway finds them where it looks (its package's dist/console).
  const wire = pathToFileURL(path.join(gantry.packageDir, "dist", "server", "gateway", "console", "wire.js")).href;
  const dir = execFileSync(
    process.execPath,
    ["--input-type=module", "-e", `const m = await import(${JSON.stringify(wire)}); console.log(m.consoleDir());`],
    { encoding: "utf8" },
  ).trim();
  assert.equal(dir, path.join(fs.realpathSync(gantry.packageDir), "dist", "console"));
  assert.ok(fs.existsSync(path.join(dir, "index.html")));
  assert.deepEqual(
    files.filter((f) => f.startsWith("test/") || f.includes("/test/")),
    [],
    "nothing of test/",
  );
  assert.deepEqual(
    files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")),
    [],
    "no TypeScript sources: Node does not strip types inside node_modules",
  );
  const pkg = JSON.parse(fs.readFileSync(path.join(gantry.packageDir, "package.json"), "utf8")) as {
    bin: Record<string, string>;
  };
  assert.equal(pkg.bin.gantry, "dist/server/cli/gantry.js");
});

test("gantry --version from the installed bin prints the version and nothing of setup", async () => {
  const port = await freePort();
  const r = await gantryCli(["--version"], { GANTRY_HOST: `127.0.0.1:${port}` });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `gantry version ${VERSION}\n`);
  assert.equal(r.stderr, `no server answers at http://127.0.0.1:${port}\n`);
  const help = await gantryCli(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Platform \(apps on Kubernetes[^\n]*\n {2}gantry deploy <file>::<export>/);
});

test('gantry serve + gantry run <tiny model> "hi" from the install, on the engine build setup made (no rebuild)', async () => {
  const built = readBuildStatus(patchedBuild(testEngineBuild()))?.state === "built";
  const server = await startTestServer({ bin: gantry.bin, env: { PATH: userPath() } });
  servers.push(server);
  const version = (await (await fetch(`${server.url}/api/version`)).json()) as { engine: { build: string } };
  assert.equal(version.engine.build, built ? "patched-local" : "prebuilt", "the same engine as this checkout");
  assert.doesNotMatch(server.logs(), /gantry: engine|building the patched/, "nothing was built or said");
  fs.copyFileSync(await tinyModelPath({ controlLogit: -8 }), path.join(work, "tiny.gguf"));
  const r = await gantryCli(["run", "./tiny.gguf", "hi"], {
    GANTRY_HOST: `127.0.0.1:${server.port}`,
    GANTRY_MODELS: server.modelsDir,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.trim().length > 0, "an answer");
  assert.match(r.stderr, /copying file sha256:[0-9a-f]{64}/, "the GGUF was uploaded to the server");
  const tags = (await (await fetch(`${server.url}/api/tags`)).json()) as { models: { name: string }[] };
  assert.ok(tags.models.some((m) => m.name === "tiny:latest"));
});

test("without a compiler the first engine use says once that the prebuilt binary is used; later starts say nothing", async () => {
  const cache = fs.mkdtempSync(path.join(work, "cache-"));
  // PATH without cmake, compilers or git: the installed bin and Node only.
  const env = { PATH: [path.dirname(gantry.bin), path.dirname(process.execPath)].join(":"), GANTRY_CACHE: cache };
  const notice = /gantry: engine: cannot build the patched addon: missing cmake[^\n]*; using the prebuilt binary/g;
  const first = await startTestServer({ bin: gantry.bin, env });
  const engine = ((await (await fetch(`${first.url}/api/version`)).json()) as { engine: { build: string } }).engine;
  await first.stop();
  assert.equal(engine.build, "prebuilt");
  assert.equal(first.logs().match(notice)?.length, 1, first.logs());
  const second = await startTestServer({ bin: gantry.bin, env });
  await second.stop();
  assert.doesNotMatch(second.logs(), /gantry: engine/, "said once, not on every start");
});

test('app files import { defineApp } from "gantry" in any project (npm init -y, "type": "module", none); bad ones exit 2', async () => {
  const source = `import { defineApp } from "gantry";
export const chat = defineApp({ model: "hf.co/org/repo:Q4_K_M", scaling: { minReplicas: 0, maxReplicas: 3 } });
export const wrong = defineApp({ model: "hf.co/org/repo", scaling: { maxReplicas: 0 } });
`;
  for (const kind of PROJECT_KINDS) {
    const project = userProject(kind, work);
    fs.writeFileSync(path.join(project, "app.ts"), source);
    fs.writeFileSync(
      path.join(project, "legacy.js"),
      'const { defineApp } = require("gantry");\nmodule.exports = { chat: defineApp({ model: "hf.co/org/repo" }) };\n',
    );
    // The app loads (so the command goes on to the cluster, and fails there: exit 1, not 2).
    for (const ref of ["app.ts::chat", ...(kind === "module" ? [] : ["legacy.js::chat"])]) {
      const ok = await gantryCli(["deploy", ref, "--kubeconfig", path.join(work, "no-kubeconfig")], {}, project);
      assert.equal(ok.code, 1, `${kind} ${ref}: ${ok.stderr}`);
      assert.match(ok.stderr, /^Error: cannot read the kubeconfig [^\n]*\n$/, `${kind} ${ref}: one line, no warning`);
    }
    const cases: [string[], RegExp][] = [
      [["deploy", "app.ts::chats"], /^Error: app\.ts has no export "chats" \(exports that are apps: chat, wrong\)\n$/],
      [["deploy", "app.ts::wrong"], /^Error: app\.ts::wrong: invalid app: spec\.scaling\.maxReplicas: Too small/],
      [["run", "app.ts::missing"], /^Error: app\.ts has no export "missing" \(exports that are apps: chat, wrong\)\n$/],
      [["deploy", "nope.ts::chat"], /^Error: nope\.ts: no such file\n$/],
    ];
    for (const [args, message] of cases) {
      const r = await gantryCli(args, {}, project);
      assert.equal(r.code, 2, `${kind}: ${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message, kind);
      assert.equal(r.stdout, "");
    }
  }
});

test("an app file type-checks against the installed package's declarations", () => {
  const project = fs.mkdtempSync(path.join(work, "project-"));
  fs.mkdirSync(path.join(project, "node_modules"));
  fs.symlinkSync(gantry.packageDir, path.join(project, "node_modules", "gantry"));
  fs.writeFileSync(path.join(project, "package.json"), '{ "type": "module" }\n');
  fs.writeFileSync(
    path.join(project, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { module: "nodenext", strict: true, noEmit: true, types: [] } }),
  );
  const tsc = (source: string) => {
    fs.writeFileSync(path.join(project, "app.ts"), source);
    try {
      execFileSync(process.execPath, [path.join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", project], {
        encoding: "utf8",
      });
      return "";
    } catch (e) {
      return String((e as { stdout?: string }).stdout);
    }
  };
  const good = `import { defineApp } from "gantry";
export const chat = defineApp({
  model: "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M",
  resources: { profile: "nvidia-gpu", gpus: 1 },
  scaling: { minReplicas: 0, maxReplicas: 3 },
});
`;
  assert.equal(tsc(good), "", "the issue's example type-checks (declarations included, no skipLibCheck)");
  assert.match(
    tsc(good.replace("gpus: 1", 'gpus: "1"')),
    /app\.ts\(4,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/,
  );
  assert.match(
    tsc(good.replace("maxReplicas: 3", "maxReplica: 3")),
    /app\.ts\(5,\d+\): error TS\d+: .*'maxReplica' does not exist/,
  );
});

test("bin/gantry runs a checkout's sources from PATH without setup lines when nothing needed setting up", async () => {
  const port = await freePort();
  const r = await runCli(["--version"], {
    bin: path.join(REPO, "bin", "gantry"),
    cwd: work,
    env: { GANTRY_HOST: `127.0.0.1:${port}` },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `gantry version ${VERSION}\n`);
  assert.equal(r.stderr, `no server answers at http://127.0.0.1:${port}\n`, "no gantry-setup lines");
});
