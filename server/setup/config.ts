// The variables the engine setup reads (server/setup/env.sh's build step, `npm start`, and `gantry serve`/`gantry run`
// before a server first starts): one zod schema, parsed at each entry point and passed down as values.
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { envFlag } from "../common/config.ts";
import { ServerConfigSchema } from "../config.ts";

export const SetupEnvSchema = ServerConfigSchema.pick({ GANTRY_ENGINE_BUILD: true }).extend({
  GANTRY_CACHE: z
    .string()
    .default(path.join(os.homedir(), ".cache", "gantry"))
    .describe("Cache of everything setup downloads or builds (the patched engine, the default model)"),
  GANTRY_ENGINE_CPU: z
    .enum(["native", "portable"])
    .default("native")
    .describe(
      "CPU target of a GANTRY_ENGINE_BUILD=source build: native = this machine's instruction set; portable = any x86-64/arm64 CPU (images)",
    ),
  GANTRY_ENGINE_REBUILD: envFlag()
    .default(false)
    .describe("Retry a patched engine build that failed before (otherwise the prebuilt binary is used at once)"),
  NODE_LLAMA_CPP_GPU: z
    .string()
    .optional()
    .describe(
      "node-llama-cpp's GPU backend (cuda, vulkan, metal; the operator's GPU profiles set it): the CPU-only patched build is then not built",
    ),
  CC: z.string().optional().describe("C compiler of the patched engine build (default: cc, gcc or clang on PATH)"),
  CXX: z
    .string()
    .optional()
    .describe("C++ compiler of the patched engine build (default: c++, g++ or clang++ on PATH)"),
  PATH: z.string().default("").describe("Where the build tools (cmake, git, ninja or make, compilers) are found"),
});

export type SetupEnv = z.infer<typeof SetupEnvSchema>;

/** What a process that serves models reads (`gantry serve`, `npm start`): the server's settings and the setup's. */
export const ServeProcessEnvSchema = ServerConfigSchema.extend(SetupEnvSchema.shape);
