import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { ConfigError } from "../../../server/common/config.ts";
import { cliConfigPath, loadCliConfig } from "../../../server/platform/cli-config.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-config-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test("the file: GANTRY_CONFIG, else $XDG_CONFIG_HOME/gantry/config.yaml, else ~/.config/gantry/config.yaml", () => {
  assert.equal(cliConfigPath({ GANTRY_CONFIG: "/etc/g.yaml", XDG_CONFIG_HOME: "/x" }), "/etc/g.yaml");
  assert.equal(cliConfigPath({ XDG_CONFIG_HOME: "/x" }), "/x/gantry/config.yaml");
  assert.equal(cliConfigPath({}), path.join(os.homedir(), ".config", "gantry", "config.yaml"));
});

test("context, org and base URL are read; no file means no defaults", () => {
  fs.mkdirSync(path.join(dir, "gantry"));
  fs.writeFileSync(
    path.join(dir, "gantry", "config.yaml"),
    "context: prod\norg: acme\nbaseUrl: https://gantry.example.com\nkubeconfig: ~/kc.yaml\n",
  );
  assert.deepEqual(loadCliConfig({ XDG_CONFIG_HOME: dir }), {
    context: "prod",
    org: "acme",
    baseUrl: "https://gantry.example.com",
    kubeconfig: path.join(os.homedir(), "kc.yaml"),
  });
  assert.deepEqual(loadCliConfig({ XDG_CONFIG_HOME: path.join(dir, "none") }), {});
});

test("a bad file names the file and the field; a GANTRY_CONFIG that is missing is an error", () => {
  const bad = path.join(dir, "bad.yaml");
  fs.writeFileSync(bad, "org: Acme Corp\nbaseUrl: not a url\ncontxt: prod\n");
  assert.throws(
    () => loadCliConfig({ GANTRY_CONFIG: bad }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.issues.some((i) => i === `${bad}: org: must be a DNS label`) &&
      e.issues.some((i) => i.startsWith(`${bad}: baseUrl:`)) &&
      e.issues.some((i) => i.includes("contxt")),
  );
  assert.throws(() => loadCliConfig({ GANTRY_CONFIG: path.join(dir, "missing.yaml") }), /cannot read/);
});
