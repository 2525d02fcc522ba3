// The settings catalogue: each process's environment schema lists every invalid variable at once, applies its
// defaults, and its --help names every variable it reads with its description; ESLint refuses a direct process.env
// read outside the catalogue, naming it.
import assert from "node:assert/strict";
import path from "node:path";
import { describe, it } from "node:test";
import { ESLint } from "eslint";
import type { z } from "zod";
import { ConfigError, envHelp, parseEnv } from "../../../server/common/config.ts";
import { ServerConfigSchema } from "../../../server/config.ts";
import { CliEnvSchema, CliOnlyEnvSchema } from "../../../server/cli/config.ts";
import { GatewayEnvSchema } from "../../../server/gateway/env.ts";
import { ServeProcessEnvSchema, SetupEnvSchema } from "../../../server/setup/config.ts";
import { OperatorEnvSchema } from "../../../operator/env.ts";

const REPO = path.resolve(import.meta.dirname, "../../..");
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

const issuesOf = (schema: z.ZodObject, env: Record<string, string>): string[] => {
  try {
    parseEnv(schema, env);
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    return e.issues;
  }
  assert.fail("parseEnv accepted an invalid environment");
};

/** Every schema, with variables that are all invalid at once, and the defaults it must apply. */
const CASES: Array<{
  name: string;
  schema: z.ZodObject;
  invalid: Record<string, string>;
  defaults: Record<string, unknown>;
}> = [
  {
    name: "gantry serve (server + engine setup)",
    schema: ServeProcessEnvSchema,
    invalid: {
      GANTRY_NUM_PARALLEL: "0",
      GANTRY_LOG_LEVEL: "loud",
      GANTRY_ENGINE_CPU: "avx9",
      GANTRY_KEEP_ALIVE: "soon",
    },
    defaults: { GANTRY_HOST: "127.0.0.1:11434", GANTRY_ENGINE_BUILD: "auto", GANTRY_ENGINE_CPU: "native" },
  },
  {
    name: "engine setup",
    schema: SetupEnvSchema,
    invalid: { GANTRY_ENGINE_BUILD: "fast", GANTRY_ENGINE_CPU: "avx9", GANTRY_ENGINE_REBUILD: "maybe" },
    defaults: { GANTRY_ENGINE_BUILD: "auto", GANTRY_ENGINE_CPU: "native", GANTRY_ENGINE_REBUILD: false },
  },
  {
    name: "the CLI",
    schema: CliEnvSchema,
    invalid: { GANTRY_ENGINE_BUILD: "fast", GANTRY_ENGINE_REBUILD: "maybe" },
    defaults: { GANTRY_HOST: "127.0.0.1:11434", GANTRY_ENGINE_BUILD: "auto", GANTRY_CONFIG: undefined },
  },
  {
    name: "gantry operator",
    schema: OperatorEnvSchema,
    invalid: { GANTRY_LOG_LEVEL: "loud" },
    defaults: { GANTRY_LOG_LEVEL: "info", POD_NAME: undefined, GANTRY_OPERATOR_LISTEN: undefined },
  },
  {
    name: "gantry gateway",
    schema: GatewayEnvSchema,
    invalid: { GANTRY_LOG_LEVEL: "loud" },
    defaults: { GANTRY_LOG_LEVEL: "info", POD_NAME: undefined },
  },
];

for (const c of CASES) {
  describe(`the environment schema of ${c.name}`, () => {
    it("lists every invalid variable at once, each with the value it got", () => {
      const issues = issuesOf(c.schema, c.invalid);
      assert.equal(issues.length, Object.keys(c.invalid).length, issues.join("\n"));
      for (const [key, value] of Object.entries(c.invalid))
        assert.ok(
          issues.some((i) => i.startsWith(`${key}: `) && i.includes(`(got "${value}")`)),
          `${key} in ${issues.join("; ")}`,
        );
    });

    it("applies its defaults (empty strings count as unset)", () => {
      const empty = Object.fromEntries(Object.keys(c.schema.shape).map((k) => [k, ""]));
      for (const env of [{}, empty]) {
        const parsed = parseEnv(c.schema, env) as Record<string, unknown>;
        for (const [key, value] of Object.entries(c.defaults)) assert.equal(parsed[key], value, key);
      }
    });

    it("names every variable in --help with its description, and the defaults", () => {
      const help = envHelp("Environment variables", c.schema);
      for (const [key, field] of Object.entries(c.schema.shape)) {
        const description = (field as z.ZodType).description;
        assert.ok(description, `${key} has a description`);
        assert.match(help, new RegExp(`^  ${key} +${escape(description)}`, "m"));
      }
      for (const [key, value] of Object.entries(c.defaults))
        if (typeof value === "string")
          assert.match(help, new RegExp(`^  ${key} .*\\(default: ${escape(value)}\\)$`, "m"));
    });
  });
}

describe("the catalogue", () => {
  it("declares a variable read by several processes once: the same schema object everywhere", () => {
    assert.equal(OperatorEnvSchema.shape.GANTRY_LOG_LEVEL, ServerConfigSchema.shape.GANTRY_LOG_LEVEL);
    assert.equal(GatewayEnvSchema.shape.GANTRY_LOG_LEVEL, ServerConfigSchema.shape.GANTRY_LOG_LEVEL);
    assert.equal(CliEnvSchema.shape.GANTRY_HOST, ServerConfigSchema.shape.GANTRY_HOST);
    assert.equal(CliEnvSchema.shape.GANTRY_CACHE, SetupEnvSchema.shape.GANTRY_CACHE);
    assert.equal(SetupEnvSchema.shape.GANTRY_ENGINE_BUILD, ServerConfigSchema.shape.GANTRY_ENGINE_BUILD);
    assert.equal(CliOnlyEnvSchema.shape.KUBECONFIG, OperatorEnvSchema.shape.KUBECONFIG);
  });

  it("parses on/off switches", () => {
    for (const v of ["1", "true", "yes", "on"])
      assert.equal(parseEnv(SetupEnvSchema, { GANTRY_ENGINE_REBUILD: v }).GANTRY_ENGINE_REBUILD, true);
    for (const v of ["0", "false", "no", "off"])
      assert.equal(parseEnv(SetupEnvSchema, { GANTRY_ENGINE_REBUILD: v }).GANTRY_ENGINE_REBUILD, false);
  });
});

describe("npm run lint's rule", () => {
  const eslint = new ESLint({ cwd: REPO });
  const lint = async (file: string, code: string) =>
    (await eslint.lintText(code, { filePath: path.join(REPO, file) }))[0]!.messages;

  const reads: Array<[string, string]> = [
    ["process.env.X", "export const x = process.env.GANTRY_X;\n"],
    ["const { env } = process", "const { env } = process;\nexport const x = env.GANTRY_X;\n"],
    [
      "processEnvironment().X",
      'import { processEnvironment } from "../common/config.ts";\nexport const x = processEnvironment().GANTRY_X;\n',
    ],
    ['import { env } from "node:process"', 'import { env } from "node:process";\nexport const x = env.GANTRY_X;\n'],
  ];
  for (const [what, code] of reads)
    it(`refuses ${what} in server/ and operator/, naming the catalogue`, async () => {
      for (const file of ["server/store/new-module.ts", "operator/controller/new-module.ts"]) {
        const messages = await lint(file, code);
        assert.ok(messages.length > 0, `${file}: ${what} passed the lint`);
        for (const m of messages) assert.match(m.message, /settings catalogue.*server\/config\.ts.*parseEnv/, file);
      }
    });

  it("allows it in the catalogue's shared module only (the native port hands the addon its switches by a call)", async () => {
    const read = "export const x = process.env.GANTRY_X;\n";
    const write = 'export const set = (): void => {\n  process.env.NODE_LLAMA_CPP_X = "1";\n};\n';
    assert.deepEqual(await lint("server/common/config.ts", read), []);
    for (const file of ["server/engine/native/node-llama-cpp.ts", "server/engine/native/patched-build.ts"]) {
      assert.ok((await lint(file, read)).length > 0, `${file} reads no environment`);
      assert.ok((await lint(file, write)).length > 0, `${file} writes no environment`);
    }
    assert.ok((await lint("server/engine/new-module.ts", read)).length > 0, "the rest of the engine is held to it");
  });
});
