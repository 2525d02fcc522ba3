// The README's hosted half, run as printed: its "On Kubernetes: `helm install`" block, then its "ModelApp operator"
// block, as one shell script from the checkout (bin/ on PATH, as the README says), against a fresh control plane of
// this test's own (nothing installed: no CRD, no gantry-system, no acme). Then the README's openai-client line.
// What the test control plane lacks is stood in for, and only that: `npm run image` (no Docker engine; the process
// runtime runs this checkout instead of an image), `kubectl port-forward` (no kubelet streaming: a local TCP forward
// to the Service's ClusterIP, which this machine reaches), pod labels that opt the chart's pods into the process
// runtime and the model hub (a local one serving the README's models) added to `helm install`, and the local port
// 8080 (another free one, so parallel runs do not clash).
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { startControlPlane, stopControlPlane, type ControlPlane } from "../../cluster/control-plane.ts";
import { PROCESS_RUNTIME_LABEL } from "../../cluster/kwok-config.ts";
import { POD_GATEWAY } from "../../cluster/runtime/pod-network.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { freePort, REPO } from "../../support/server.ts";

const README = fs.readFileSync(path.join(REPO, "README.md"), "utf8");
let cp: ControlPlane, hub: HubServer, work: string, port: number;
let script: { pid: number; done: Promise<{ code: number | null; stdout: string; stderr: string }> } | undefined;

/** The first fenced shell block after a README heading, as printed. */
function readmeBlock(heading: string): string {
  const at = README.indexOf(`\n## ${heading}\n`);
  assert.ok(at >= 0, `README has "## ${heading}"`);
  const block = /\n```(?:bash|sh)\n([\s\S]*?)\n```/.exec(README.slice(at));
  assert.ok(block, `a shell block under "## ${heading}"`);
  return block[1]!;
}

before(async () => {
  // The hub first (milliseconds): once it listens, after() closes it even when the control plane fails to start.
  hub = await startHubServer({ host: "0.0.0.0" });
  cp = await startControlPlane();
  const model = await tinyModelPath();
  for (const org of ["bartowski", "HuggingFaceTB"])
    await hub.register({
      org,
      repo: "SmolLM2-135M-Instruct-GGUF",
      files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": model },
    });
  work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-readme-"));
  port = await freePort();
});

after(async () => {
  if (script) {
    try {
      process.kill(-script.pid, "SIGTERM"); // the script's process group: the backgrounded port-forward
    } catch {
      /* gone */
    }
  }
  await hub?.close();
  if (cp) await stopControlPlane(cp.dir);
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** `helm`, `kubectl` and `npm` as the test control plane needs them, in front of the real ones on PATH. */
function standIns(): string {
  const bin = path.join(work, "bin");
  fs.mkdirSync(bin);
  const label = PROCESS_RUNTIME_LABEL.replaceAll(".", "\\.");
  const runtime = ["operator", "gateway", "tests", "operator.config"]
    .map((v) => `--set-string '${v}.podLabels.${label}=true'`)
    .join(" ");
  const write = (name: string, body: string) =>
    fs.writeFileSync(path.join(bin, name), `#!/usr/bin/env bash\nset -euo pipefail\n${body}\n`, { mode: 0o755 });
  write(
    "helm",
    `case "$1" in install|upgrade) exec "${cp.binDir}/helm" "$@" ${runtime} ` +
      `--set operator.config.hubUrl=http://${POD_GATEWAY}:${hub.port} ;; esac\nexec "${cp.binDir}/helm" "$@"`,
  );
  fs.writeFileSync(
    path.join(work, "forward.mjs"),
    `import net from "node:net";
const [local, host, remote] = process.argv.slice(2);
net.createServer((c) => { const u = net.connect(Number(remote), host); c.pipe(u).pipe(c); c.on("error", () => u.destroy()); u.on("error", () => c.destroy()); })
  .listen(Number(local), "127.0.0.1", () => console.log(\`Forwarding from 127.0.0.1:\${local} -> \${remote}\`));
`,
  );
  // kubectl [-n ns] port-forward svc/<name> <local>:<remote>: forwards to the Service's ClusterIP.
  write(
    "kubectl",
    `if [[ " $* " == *" port-forward "* ]]; then
  ns=default; for ((i=1; i<=$#; i++)); do [ "\${!i}" = -n ] && { j=$((i+1)); ns="\${!j}"; }; done
  svc="$(printf '%s\\n' "$@" | sed -n 's#^svc/##p')"; ports="$(printf '%s\\n' "$@" | grep -E '^[0-9]+:[0-9]+$')"
  ip="$("${cp.binDir}/kubectl" -n "$ns" get svc "$svc" -o jsonpath='{.spec.clusterIP}')"
  exec "${process.execPath}" "${work}/forward.mjs" "\${ports%%:*}" "$ip" "\${ports##*:}"
fi
exec "${cp.binDir}/kubectl" "$@"`,
  );
  return bin;
}

test("README: helm install, a key, kubectl apply and wait, port-forward, curl, helm test, then the ModelApp section's key, curl, gantry deploy and gantry apps, as printed", async () => {
  const helmBlock = readmeBlock("On Kubernetes: `helm install`");
  const operatorBlock = readmeBlock("On Kubernetes: the `ModelApp` operator");
  const imageLine = /^npm run image .*$/m.exec(helmBlock)?.[0];
  assert.ok(imageLine, "the helm block builds the image first");
  const body = [helmBlock.replace(imageLine, `: # ${imageLine} (stand-in: no Docker engine)`), operatorBlock]
    .join("\n")
    .replaceAll(/\b8080\b/g, String(port));
  // The key the reader ends with, for the openai line below; then the script ends (its port-forward goes on).
  fs.writeFileSync(path.join(work, "readme.sh"), `set -euo pipefail\n${body}\necho "README-KEY=$KEY"\n`);
  const proc = spawn("bash", [path.join(work, "readme.sh")], {
    cwd: REPO,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      PATH: [standIns(), path.join(REPO, "bin"), cp.binDir, path.dirname(process.execPath), process.env.PATH].join(":"),
      KUBECONFIG: cp.kubeconfig,
      XDG_CONFIG_HOME: path.join(work, "config"),
    },
  });
  let stdout = "",
    stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  script = {
    pid: proc.pid!,
    done: new Promise((resolve) => proc.once("exit", (code) => resolve({ code, stdout, stderr }))),
  };
  const r = await script.done;
  const out = `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.code, 0, out);
  assert.match(r.stdout, /^Image: registry\.example\.com\/gantry:\d+\.\d+\.\d+ \(every Gantry pod\)\.$/m, out);
  assert.match(r.stdout, /modelapp\.gantry\.dev\/chat condition met/, out);
  const completions = [...r.stdout.matchAll(/\{"id":"chatcmpl-[^\n]*?"object":"chat\.completion"/g)];
  assert.equal(completions.length, 2, `both curls answered:\n${out}`);
  assert.match(r.stdout, /Phase: +Succeeded/, `helm test passed:\n${out}`);
  // (curl prints no newline after its answer: the next command's output goes on the same line)
  assert.match(r.stdout, new RegExp(`demo is ready .* at http://127\\.0\\.0\\.1:${port}/acme/demo$`, "m"), out);
  assert.match(r.stdout, /^chat +hf\.co\/bartowski\/SmolLM2-135M-Instruct-GGUF:Q4_K_M +private +1\/1 +Ready /m, out);
  assert.match(r.stdout, /^demo +hf\.co\/HuggingFaceTB\/SmolLM2-135M-Instruct-GGUF:Q4_K_M +private /m, out);

  // "With the openai client: const client = new OpenAI({ baseURL: …, apiKey: process.env.KEY });"
  const line = /With the openai client[^\n]*\n\n```js\nconst client = (new OpenAI\(\{[^\n]*\}\));\n```/.exec(
    README,
  )?.[1];
  assert.ok(line, "the README's openai line");
  const KEY = /^README-KEY=(\S+)$/m.exec(r.stdout)![1]!;
  const make = new Function("OpenAI", "process", `return ${line.replaceAll("8080", String(port))}`);
  const client = make(OpenAI, { env: { KEY } }) as OpenAI;
  const answer = await client.chat.completions.create({
    model: "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 3,
  });
  assert.equal(answer.choices[0]?.message.role, "assistant");
  // The app deployed from examples/chat.ts answers through the same port-forward, woken from zero, by its name.
  const demo = new OpenAI({ baseURL: `http://127.0.0.1:${port}/acme/demo/v1`, apiKey: KEY });
  const woke = await demo.chat.completions.create({
    model: "demo",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 3,
  });
  assert.equal(woke.choices[0]?.message.role, "assistant");
  execFileSync(path.join(cp.binDir, "helm"), [
    "uninstall",
    "gantry",
    "-n",
    "gantry-system",
    "--kubeconfig",
    cp.kubeconfig,
  ]);
});
