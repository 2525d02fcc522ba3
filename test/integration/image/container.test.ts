// The seed's container flow, for real: the image `npm run image` builds (docker or podman, whichever answers; podman
// from Debian's packages in CI), then the README's "In a container" lines as printed, with only what would clash on a
// shared machine renamed (the container, the volume, the host port: 11434 stays the container's port) and the model
// hub stood in for: a hub on this machine serving SmolLM2 under the README's name, which the container reaches at
// host.containers.internal through GANTRY_HUB_URL (the documented variable), added to the run line. Then what a user
// does next: the host's openai and ollama clients, a read-only root filesystem, a stop during a stream, the operator
// and gateway commands of the same image against the test control plane, and a model volume it cannot write.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { containerImage, engineCleanup, engineRun, type ContainerImage } from "../../support/container-image.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { smollm2Path } from "../../support/models.ts";
import { freePort, REPO } from "../../support/server.ts";
import { eventually, operatorCluster } from "../operator/helpers.ts";

const sh = promisify(execFile);
const README = fs.readFileSync(path.join(REPO, "README.md"), "utf8");
const MODEL = "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M";
const id = `${process.pid}-${Date.now().toString(36)}`;
const NAME = `gantry-test-${id}`;
const VOLUME = `gantry-models-test-${id}`;
const containers = [NAME, `${NAME}-ro`, `${NAME}-gw`, `${NAME}-op`, `${NAME}-bad`];
let img: ContainerImage, hub: HubServer, port: number, work: string;

/** The README's "In a container" block, one command a line (continuations joined). */
function readmeLines(): string[] {
  const at = README.indexOf("\n## In a container\n");
  assert.ok(at >= 0, 'README has "## In a container"');
  const block = /\n```bash\n([\s\S]*?)\n```/.exec(README.slice(at));
  assert.ok(block, "a bash block under it");
  return block[1]!
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

/** A README line as this test runs it: its engine, names and host port, and the hub stand-in on the run line. */
function adapt(line: string): string {
  let l = line.replace(/^docker /, `${img.engine} `);
  l = l.replace(/-v gantry-models:/, `-v ${VOLUME}:`).replace(/-p 11434:11434/, `-p 127.0.0.1:${port}:11434`);
  l = l.replace(/--name gantry /, `--name ${NAME} `).replace(/ (exec|restart|stop) gantry( |$)/, ` $1 ${NAME}$2`);
  l = l.replace(/ run -d /, ` run -d -e GANTRY_HUB_URL=http://host.containers.internal:${hub.port} `);
  return l.replace("http://127.0.0.1:11434/", `http://127.0.0.1:${port}/`);
}

const shell = async (line: string, timeout = 600_000) => {
  const { stdout, stderr } = await sh("bash", ["-c", line], { env: img.env, timeout, maxBuffer: 16 << 20 });
  return { stdout, stderr };
};

const health = (url: string) =>
  eventually(`${url} answers 200`, async () => ((await fetch(url)).status === 200 ? true : undefined), 180_000, 200);

before(async () => {
  // The hub first (milliseconds): once it listens, after() closes it even when the image build fails.
  hub = await startHubServer({ host: "0.0.0.0" });
  img = await containerImage();
  await hub.register({
    org: "bartowski",
    repo: "SmolLM2-135M-Instruct-GGUF",
    files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await smollm2Path() },
  });
  port = await freePort();
  work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-container-"));
});

after(async () => {
  if (img) engineCleanup(img, containers, [VOLUME]);
  await hub?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("the README's container lines, as printed: run, `exec gantry run` answers, curl answers, restart keeps the model", async () => {
  const lines = readmeLines();
  assert.match(lines[0]!, /^npm run image\b/, "the first line builds the image (done in before())");
  const rest = lines.slice(1).filter((l) => !/ stop gantry/.test(l));
  assert.deepEqual(
    rest.map((l) => l.split(" ").slice(0, 2).join(" ")),
    ["docker run", "docker exec", "curl http://127.0.0.1:11434/v1/chat/completions", "docker restart"],
  );
  const [runLine, execLine, curlLine, restartLine] = rest.map(adapt);
  await shell(runLine!);
  await health(`http://127.0.0.1:${port}/health`);

  const asked = await shell(execLine!);
  assert.ok(asked.stdout.trim().length > 0, `gantry run answered (stderr: ${asked.stderr.slice(-400)})`);
  const pulls = hub.requests.filter((r) => r.method === "GET" && r.file?.endsWith(".gguf")).length;
  assert.ok(pulls >= 1, "the model came from the hub stand-in");

  const curled = JSON.parse((await shell(curlLine!)).stdout) as { choices: { message: { content: string } }[] };
  assert.ok(curled.choices[0]!.message.content.length > 0, "curl on /v1/chat/completions answered");

  await shell(restartLine!);
  await health(`http://127.0.0.1:${port}/health`);
  const listed = await engineRun(img, ["exec", NAME, "gantry", "list"]);
  assert.match(listed, /SmolLM2-135M-Instruct-GGUF/, "the pulled model survived the restart (the volume)");
  const again = await shell(execLine!);
  assert.ok(again.stdout.trim().length > 0);
  assert.equal(
    hub.requests.filter((r) => r.method === "GET" && r.file?.endsWith(".gguf")).length,
    pulls,
    "not pulled again",
  );
});

test("the host's openai and ollama clients reach /v1/chat/completions and /api/chat", async () => {
  const openai = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "unused" });
  const chat = await openai.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Say hello." }],
    max_tokens: 16,
  });
  assert.ok(chat.choices[0]!.message.content!.length > 0);
  const ollama = new Ollama({ host: `http://127.0.0.1:${port}` });
  const answer = await ollama.chat({
    model: MODEL,
    messages: [{ role: "user", content: "Say hello." }],
    options: { num_predict: 16 },
  });
  assert.ok(answer.message.content.length > 0);
});

test("the README's stop during a stream: the stream ends with the server's error line, the container exits 0 in its grace period", async () => {
  const stopLine = readmeLines().find((l) => / stop gantry/.test(l));
  assert.ok(stopLine, "the README stops the container");
  const openai = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "unused", maxRetries: 0 });
  const stream = await openai.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Write a very long story about the sea." }],
    max_tokens: 100_000,
    stream: true,
  });
  let text = "";
  let stopping: Promise<unknown> | undefined;
  let ended: unknown;
  try {
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      // The first tokens are out: stop the container while it generates (the default 10 s grace period).
      stopping ??= shell(adapt(stopLine));
    }
  } catch (e) {
    ended = e;
  }
  await stopping;
  assert.ok(text.length > 0, "tokens streamed before the stop");
  // A clean end: the server's own error event (openai raises it as an APIError), never a cut connection.
  if (ended) {
    assert.ok(ended instanceof OpenAI.APIError, `the stream ended with the server's error, not ${String(ended)}`);
    assert.doesNotMatch(String(ended), /terminated|ECONNRESET|socket/i);
  }
  const state = (await engineRun(img, ["inspect", "-f", "{{.State.ExitCode}} {{.State.Running}}", NAME])).trim();
  assert.equal(state, "0 false", "exited by itself (0), not killed at the end of the grace period (137)");
});

test("a read-only root filesystem with a tmpfs /tmp serves the model already in the volume, as uid 65532", async () => {
  const roPort = await freePort();
  const name = `${NAME}-ro`;
  await engineRun(img, [
    "run",
    "-d",
    "--read-only",
    "--tmpfs",
    "/tmp",
    "-v",
    `${VOLUME}:/models`,
    "-p",
    `127.0.0.1:${roPort}:11434`,
    "--name",
    name,
    img.image,
  ]);
  await health(`http://127.0.0.1:${roPort}/health`);
  assert.equal((await engineRun(img, ["exec", name, "id", "-u"])).trim(), "65532");
  const out = await engineRun(img, ["exec", name, "gantry", "run", MODEL, "Hi there!"]);
  assert.ok(out.trim().length > 0);
  for (const tool of ["cc", "gcc", "g++", "cmake", "make"])
    await assert.rejects(engineRun(img, ["exec", name, "sh", "-c", `command -v ${tool}`]), `no ${tool} in the image`);
});

test("a model volume the container cannot write: gantry serve exits with an error naming the path and the uid", async () => {
  const dir = fs.mkdtempSync(path.join(work, "models-"));
  fs.chmodSync(dir, 0o755); // owned by this test's user (root), not by the image's uid 65532
  const r = await sh(img.engine, ["run", "--name", `${NAME}-bad`, "-v", `${dir}:/models`, img.image], {
    env: img.env,
  }).then(
    () => undefined,
    (e: Error & { stderr: string; code: number }) => e,
  );
  assert.ok(r, "the container failed");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /model store \/models .*not writable.*uid 65532/);
});

test("the image's operator and gateway commands start against the test control plane and answer /healthz", async () => {
  const { cp } = await operatorCluster();
  const { kubeConfigFor } = await import("../../cluster/test-cluster.ts");
  const ns = await createTestNamespace(kubeConfigFor(cp), "image-op");
  // The admin kubeconfig is root's (0600); a readable copy for the image's uid. The host network reaches the
  // apiserver on 127.0.0.1.
  const kubeDir = fs.mkdtempSync(path.join(work, "kube-"));
  fs.chmodSync(kubeDir, 0o755);
  fs.copyFileSync(cp.kubeconfig, path.join(kubeDir, "config"));
  fs.chmodSync(path.join(kubeDir, "config"), 0o644);
  const [gwPort, opPort] = [await freePort(), await freePort()];
  const common = ["run", "-d", "--network", "host", "-v", `${kubeDir}:/kube:ro`, "-e", "KUBECONFIG=/kube/config"];
  await engineRun(img, [...common, "--name", `${NAME}-gw`, img.image, "gateway", "--listen", `127.0.0.1:${gwPort}`]);
  await engineRun(img, [
    ...common,
    "--name",
    `${NAME}-op`,
    "-e",
    `GANTRY_OPERATOR_LISTEN=127.0.0.1:${opPort}`,
    "-e",
    `GANTRY_OPERATOR_NAMESPACE=${ns}`,
    "-e",
    `POD_NAMESPACE=${ns}`,
    img.image,
    "operator",
  ]);
  await health(`http://127.0.0.1:${gwPort}/healthz`);
  await health(`http://127.0.0.1:${opPort}/healthz`);
});
