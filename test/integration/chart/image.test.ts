// `npm run image` (server/setup/image.sh): the image it builds is the one the chart runs by default, it pushes or
// loads it as asked, and it prints the helm install that runs it. Here `docker`, `podman` and `kind` are stand-ins on
// PATH that record their arguments (the real build: test/integration/image/container.test.ts); with neither engine
// on PATH it says how to get one.
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
  tool("podman", 'if [ "$1" = info ] && [ -n "$PODMAN_DOWN" ]; then exit 1; fi\n');
  tool("kind");
  return { bin, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : []) };
}

// No CA bundle passed (the machine's is checked in its own test), the stand-ins' base image present.
const image = (args: string[], env: Record<string, string>) =>
  spawnSync("bash", [SCRIPT, ...args], {
    cwd: REPO,
    encoding: "utf8",
    env: { ...process.env, GANTRY_IMAGE_CA: "/nonexistent", ...env },
  });
const NODE_BASE = `docker image inspect docker.io/library/${/^ARG NODE_IMAGE=(\S+)$/m.exec(fs.readFileSync(path.join(REPO, "Dockerfile"), "utf8"))![1]}`;

test("the image npm run image builds is the one the chart runs by default (operator, gateway, model pods)", () => {
  const { bin, calls } = standIns();
  const r = image([], { PATH: `${bin}:${process.env.PATH}` });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(calls(), ["docker info", NODE_BASE, `docker build --target cpu -t gantry:${VERSION} .`]);
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
    NODE_BASE,
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

test("podman builds where no Docker engine answers, with the machine's CA bundle as a build secret", () => {
  const { bin, calls } = standIns();
  const r = image([], {
    PATH: `${bin}:${process.env.PATH}`,
    DOCKER_DOWN: "1",
    GANTRY_IMAGE_CA: "/etc/ssl/certs/ca-certificates.crt",
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(calls(), [
    "docker info",
    "podman info",
    NODE_BASE.replace("docker", "podman"),
    `podman build --target cpu -t gantry:${VERSION} --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt --isolation chroot .`,
  ]);
});

test("with neither docker nor podman it says how to get one and builds nothing; a bad argument is a usage error", () => {
  // A PATH with the tools image.sh needs and no container engine.
  const bare = fs.mkdtempSync(path.join(work, "bare-"));
  for (const t of ["bash", "node", "sed", "dirname", "tail", "cat", "mkdir", "rm", "mktemp"]) {
    const found = spawnSync("bash", ["-c", `command -v ${t}`], { encoding: "utf8" }).stdout.trim();
    fs.symlinkSync(found, path.join(bare, t));
  }
  const none = image([], { PATH: bare });
  assert.equal(none.status, 1);
  assert.match(none.stderr, /neither docker nor podman is installed/);
  assert.match(none.stderr, /apt-get install podman/);

  const { bin, calls } = standIns();
  const down = image([], { PATH: `${bin}:${bare}`, DOCKER_DOWN: "1", PODMAN_DOWN: "1" });
  assert.equal(down.status, 1);
  assert.match(down.stderr, /podman is installed but `podman info` fails/);
  assert.deepEqual(calls(), ["docker info", "podman info", "podman info"]);

  const bad = image(["--push"], { PATH: `${bin}:${process.env.PATH}` });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /usage: npm run image/);
});
