// `npm run e2e:kind`: the platform checks of the test control plane (test/support/platform-e2e.ts) on a kind cluster,
// for machines with a Docker engine: create the cluster, build the image and load it, then install the chart and run
// the same checks. Needs docker, kind, kubectl and helm on PATH. KEEP_CLUSTER=1 leaves the cluster running.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { platformChecks } from "../support/platform-e2e.ts";
import { GANTRY, REPO } from "../support/server.ts";

const CLUSTER = process.env.KIND_CLUSTER ?? "gantry-e2e";
const IMAGE = "gantry:e2e";
const sh = (cmd: string, args: string[]): void => {
  console.log(`$ ${cmd} ${args.join(" ")}`);
  execFileSync(cmd, args, { stdio: "inherit" });
};
const kubeconfig = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-kind-")), "kubeconfig");

sh("kind", ["create", "cluster", "--name", CLUSTER, "--kubeconfig", kubeconfig, "--wait", "120s"]);
try {
  sh("docker", ["build", "-t", IMAGE, REPO]);
  sh("kind", ["load", "docker-image", IMAGE, "--name", CLUSTER]);
  let forward: ChildProcess | undefined;
  const release = "gantry";
  await platformChecks(
    {
      kubeconfig,
      binDir: "",
      chart: path.join(REPO, "charts", "gantry"),
      release,
      releaseNs: "gantry-system",
      org: "acme",
      model: process.env.E2E_MODEL ?? "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M",
      readyTimeout: "900s",
      gantry: [process.execPath, GANTRY],
      installArgs: ["--set", "image.repository=gantry", "--set", "image.tag=e2e", "--set", "image.pullPolicy=Never"],
      // This machine reaches the gateway Service through kubectl port-forward.
      gatewayUrl: async () => {
        forward = spawn(
          "kubectl",
          ["--kubeconfig", kubeconfig, "port-forward", "-n", "gantry-system", `svc/${release}-gateway`, "18080:80"],
          { stdio: "ignore" },
        );
        await new Promise((r) => setTimeout(r, 3000));
        return "http://127.0.0.1:18080";
      },
    },
    (line) => console.log(line),
  ).finally(() => forward?.kill());
  console.log("e2e:kind passed");
} finally {
  if (!process.env.KEEP_CLUSTER) sh("kind", ["delete", "cluster", "--name", CLUSTER]);
}
