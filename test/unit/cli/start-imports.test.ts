// What a CLI start loads: `gantry serve` and `gantry prepare` (a pod's two processes, on the path of every cold start)
// must not load the cluster client (@kubernetes/client-node: some 900 modules) or yaml, which only the platform
// commands use and import on use.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { GANTRY } from "../../support/server.ts";

const HOOK = `import { registerHooks } from "node:module";
const seen = new Set();
registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); seen.add(r.url); return r; } });
process.on("exit", () => process.stderr.write("\\nMODULES " + JSON.stringify([...seen]) + "\\n"));
`;

function modulesLoaded(args: string[]): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-imports-"));
  const hook = path.join(dir, "hook.mjs");
  fs.writeFileSync(hook, HOOK);
  let stderr: string;
  try {
    execFileSync(process.execPath, ["--import", hook, GANTRY, ...args], {
      env: { ...process.env, GANTRY_MODELS: dir },
      stdio: ["ignore", "ignore", "pipe"],
      encoding: "utf8",
    });
    throw new Error("expected the command to fail: the store is empty");
  } catch (e) {
    stderr = (e as { stderr?: string }).stderr ?? "";
  }
  const line = stderr.split("\n").find((l) => l.startsWith("MODULES "));
  assert.ok(line, stderr);
  return JSON.parse(line.slice("MODULES ".length)) as string[];
}

test("gantry prepare and serve start without the cluster client or yaml", () => {
  for (const args of [
    ["prepare", "missing-model"],
    ["serve", "--bad-flag"],
  ]) {
    const loaded = modulesLoaded(args);
    assert.ok(
      loaded.some((u) => u.includes("/server/cli/commands/")),
      `${args[0]}: the hook saw the CLI load`,
    );
    const heavy = loaded.filter((u) => /node_modules\/(@kubernetes\/client-node|yaml)\//.test(u));
    assert.deepEqual(heavy, [], `${args[0]} loaded ${heavy.length} modules it does not use`);
  }
});
