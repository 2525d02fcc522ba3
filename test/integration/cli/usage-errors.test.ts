// A command line the CLI cannot take exits 2 with one line saying what is wrong (the allowed values where there is a
// list), before anything is loaded or contacted; a command that ran and failed exits 1. The CLI runs as a process.
import assert from "node:assert/strict";
import { test } from "node:test";
import { runCli } from "./run-cli.ts";

// No cluster and no server: a usage error must be told before either is needed.
const env = { KUBECONFIG: "/nonexistent/kubeconfig", GANTRY_HOST: "127.0.0.1:1" };

test("usage errors exit 2 with one line; a command that fails exits 1", async () => {
  const cases: Array<[string[], string | RegExp]> = [
    [
      ["deploy", "app.ts::chat", "--app-name", "N", "--auth", "secret"],
      'Error: --auth must be one of private, shared, public (not "secret")\n',
    ],
    [
      ["deploy", "app.ts::chat", "--strategy", "fast"],
      'Error: --strategy must be one of recreate, rolling (not "fast")\n',
    ],
    [
      ["deploy"],
      "Error: missing <file>::<export> (usage: gantry deploy <file>::<export> --app-name <name> [--auth <mode>])\n",
    ],
    [["frobnicate"], 'Error: unknown command "frobnicate" (see gantry --help)\n'],
    [["keys", "list"], /^Error: keys list: --org is required \(usage: gantry keys/],
  ];
  for (const [args, stderr] of cases) {
    const r = await runCli(args, { env });
    assert.equal(r.code, 2, `gantry ${args.join(" ")}: ${r.stderr}`);
    if (typeof stderr === "string") assert.equal(r.stderr, stderr);
    else assert.match(r.stderr, stderr);
    assert.equal(r.stderr.split("\n").length, 2, "one line");
    assert.equal(r.stdout, "");
  }
  const failed = await runCli(["list"], { env });
  assert.equal(failed.code, 1, failed.stderr);
  assert.match(failed.stderr, /^Error: could not connect to the gantry server/);
});
