import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError, parseEnv } from "../../../server/common/config.ts";
import { parseHostPort } from "../../../server/common/host-port.ts";
import { parseModelAliases, resolvePromptCacheRam, ServerConfigSchema } from "../../../server/config.ts";

test("defaults apply and empty strings count as unset", () => {
  const c = parseEnv(ServerConfigSchema, { GANTRY_NUM_PARALLEL: "", GANTRY_KEEP_ALIVE: "" });
  assert.equal(c.GANTRY_HOST, "127.0.0.1:11434");
  assert.equal(c.GANTRY_NUM_PARALLEL, 4);
  assert.equal(c.GANTRY_KEEP_ALIVE, "5m");
  assert.equal(c.GANTRY_CONTEXT_LENGTH, 0, "by memory");
  assert.equal(c.GANTRY_KV_CACHE_TYPE, "f16");
  assert.equal(c.GANTRY_FLASH_ATTENTION, "auto");
  assert.equal(c.GANTRY_STEP_PIPELINE, "auto");
  assert.equal(c.GANTRY_ARRIVAL_WAIT_MS, 50);
});

test("every invalid variable is reported at once", () => {
  assert.throws(
    () =>
      parseEnv(ServerConfigSchema, {
        GANTRY_NUM_PARALLEL: "zero",
        GANTRY_KEEP_ALIVE: "soon",
        GANTRY_LOG_LEVEL: "loud",
        GANTRY_HOST: "0.0.0.0:99999",
        GANTRY_STEP_PIPELINE: "sometimes",
        GANTRY_ARRIVAL_WAIT_MS: "60000",
      }),
    (e: ConfigError) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.issues.length, 6);
      assert.match(e.message, /GANTRY_STEP_PIPELINE/);
      assert.match(e.message, /GANTRY_ARRIVAL_WAIT_MS/);
      assert.match(e.message, /GANTRY_HOST: "0\.0\.0\.0:99999" has a port over 65535/);
      assert.match(e.message, /GANTRY_NUM_PARALLEL/);
      assert.match(e.message, /GANTRY_KEEP_ALIVE/);
      assert.match(e.message, /GANTRY_LOG_LEVEL/);
      return true;
    },
  );
});

const hosts: Array<[string, { host: string; port: number }]> = [
  ["127.0.0.1:11434", { host: "127.0.0.1", port: 11434 }],
  ["0.0.0.0", { host: "0.0.0.0", port: 11434 }],
  [":8080", { host: "127.0.0.1", port: 8080 }],
  ["http://example.test", { host: "example.test", port: 80 }],
  ["https://example.test", { host: "example.test", port: 443 }],
  ["http://localhost:9000/", { host: "localhost", port: 9000 }],
  ["[::1]:7000", { host: "::1", port: 7000 }],
];
for (const [input, want] of hosts) test(`parseHostPort(${input})`, () => assert.deepEqual(parseHostPort(input), want));

test("GANTRY_MODEL_ALIASES: alias=model pairs, comma-separated; anything else is refused naming the variable", () => {
  assert.deepEqual(parseModelAliases(" chat = hf.co/org/repo:Q4_K_M , bot=chat:latest,"), {
    chat: "hf.co/org/repo:Q4_K_M",
    bot: "chat:latest",
  });
  assert.deepEqual(parseModelAliases(""), {});
  for (const bad of ["chat", "chat=", "=model", "a=b=c", "a b=c"]) assert.equal(parseModelAliases(bad), undefined, bad);
  assert.throws(() => parseEnv(ServerConfigSchema, { GANTRY_MODEL_ALIASES: "chat" }), /GANTRY_MODEL_ALIASES/);
});

test("GANTRY_PROMPT_CACHE_RAM: auto, 0 or a size; more than the available memory is refused with both numbers", () => {
  const GiB = 1024 ** 3;
  assert.equal(parseEnv(ServerConfigSchema, {}).GANTRY_PROMPT_CACHE_RAM, "auto");
  assert.equal(resolvePromptCacheRam("auto", 12 * GiB), 3 * GiB);
  assert.equal(resolvePromptCacheRam("auto", 64 * GiB), 8 * GiB, "at most 8 GiB, as llama-server's default");
  assert.equal(resolvePromptCacheRam("0", 12 * GiB), 0);
  assert.equal(resolvePromptCacheRam("512mb", 12 * GiB), 512 * 1024 ** 2);
  assert.equal(resolvePromptCacheRam("2Gi", 12 * GiB), 2 * GiB);
  assert.throws(
    () => resolvePromptCacheRam("16gb", 12 * GiB),
    (e: ConfigError) =>
      e instanceof ConfigError &&
      /GANTRY_PROMPT_CACHE_RAM: 16gb \(16\.00 GiB\) is more than .* \(12\.00 GiB\)/.test(e.message),
  );
  assert.throws(() => parseEnv(ServerConfigSchema, { GANTRY_PROMPT_CACHE_RAM: "lots" }), /GANTRY_PROMPT_CACHE_RAM/);
});
