// `npm run image` (server/setup/image.sh): the image it builds is the one the chart runs by default, it pushes or
// loads it as asked, and it prints the helm install that runs it. There is no Docker engine on this machine: `docker`
// and `kind` are stand-ins on PATH that record their arguments; the real docker client's answer without an engine
// is checked too. Not checked here: the build itself (the Dockerfile is linted in test/integration/package).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { parseAllDocuments } from "yaml";
import { ensureBinaries } from "../../cluster/binaries.ts";
import { REPO } from "../../support/server.ts";

const SCRIPT = path.join(REPO, "server", "setup", "image.sh");
const VERSION = (JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-image-"));
after(() => fs.rmSync(work, { recursive: true, force: true }));

/** A `docker` and a `kind` that append their arguments to calls.log; `docker info` fails when DOCKER_DOWN is set. */
function standIns(): { bin: string; calls: () => string[] } {
  const bin = fs.mkdtempSync(path.join(work, "bin-"));
  const log = path.join(bin, "calls.log");
  const tool = (name: string, extra = "") =>
    fs.writeFileSync(path.join(bin, name), `#!/bin/sh\necho "${name} $*" >> "${log}"\n${extra}`, { mode: 0o755 });
  tool("docker", 'if [ "$1" = info ] && [ -n "$DOCKER_DOWN" ]; then exit 1; fi\n');
  tool("kind");
  return { bin, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : []) };
}

const image = (args: string[], env: Record<string, string>) =>
  spawnSync("bash", [SCRIPT, ...args], { cwd: REPO, encoding: "utf8", env: { ...process.env, ...env } });

test("the image npm run image builds is the one the chart runs by default (operator, gateway, model pods)", () => {
  const { bin, calls } = standIns();
  const r = image([], { PATH: `${bin}:${process.env.PATH}` });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(calls(), ["docker info", `docker build --target cpu -t gantry:${VERSION} .`]);
  assert.equal(r.stdout, "helm install gantry charts/gantry -n gantry-system --create-namespace\n");

  const rendered = execFileSync(
    path.join(ensureBinaries(), "helm"),
    ["template", "r", path.join(REPO, "charts", "gantry")],
    {
      encoding: "utf8",
    },
  );
  const images = new Set<string>();
  for (const doc of parseAllDocuments(rendered)) {
    const text = JSON.stringify(doc.toJSON());
    for (const m of text.matchAll(/"image\\?"?:\\?"([^"\\]+)/g)) images.add(m[1]!);
  }
  assert.deepEqual([...images], [`gantry:${VERSION}`], "every image the chart renders, the operator's config included");
});

test("--push tags and pushes it, --kind loads it into the cluster's nodes; the printed helm install sets the repository", () => {
  const { bin, calls } = standIns();
  const r = image(["--push", "registry.example.com/team/gantry", "--kind", "dev", "--cuda"], {
    PATH: `${bin}:${process.env.PATH}`,
  });
  assert.equal(r.status, 0, r.stderr);
  const tag = `${VERSION}-cuda`;
  assert.deepEqual(calls(), [
    "docker info",
    `docker build --target cuda -t gantry:${tag} .`,
    `docker tag gantry:${tag} registry.example.com/team/gantry:${tag}`,
    `docker push registry.example.com/team/gantry:${tag}`,
    `kind load docker-image gantry:${tag} --name dev`,
  ]);
  assert.equal(
    r.stdout,
    "helm install gantry charts/gantry -n gantry-system --create-namespace " +
      `--set image.repository=registry.example.com/team/gantry --set image.tag=${tag}\n`,
  );
  const kindDefault = standIns();
  assert.equal(image(["--kind"], { PATH: `${kindDefault.bin}:${process.env.PATH}` }).status, 0);
  assert.ok(kindDefault.calls().includes(`kind load docker-image gantry:${VERSION} --name kind`));
});

test("without a Docker engine it says so in one step and builds nothing; a bad argument is a usage error", () => {
  const { bin, calls } = standIns();
  const down = image([], { PATH: `${bin}:${process.env.PATH}`, DOCKER_DOWN: "1" });
  assert.equal(down.status, 1);
  assert.match(down.stderr, /^gantry-image: no Docker engine answers \(docker info failed\)/);
  assert.deepEqual(calls(), ["docker info"]);
  // The machine's own docker client (or none at all), where no engine runs (as here): the same answer.
  if (spawnSync("docker", ["info"]).status !== 0) {
    const real = image([], {});
    assert.equal(real.status, 1);
    assert.match(real.stderr, /no Docker engine answers/);
  }
  const bad = image(["--push"], { PATH: `${bin}:${process.env.PATH}` });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /usage: npm run image/);
});
