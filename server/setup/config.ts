// The variables the engine setup reads (server/setup/env.sh's build step, `npm start`, and `gantry serve`/`gantry run`
// before a server first starts): one zod schema, parsed at each entry point and passed down as values.
import { z } from "zod";
import { envFlag } from "../common/config.ts";
import { ServerConfigSchema } from "../config.ts";

// GANTRY_ENGINE_BUILD, GANTRY_CACHE and GANTRY_ENGINE_CPU are the server's too: it finds the build with them.
export const SetupEnvSchema = ServerConfigSchema.pick({
  GANTRY_ENGINE_BUILD: true,
  GANTRY_CACHE: true,
  GANTRY_ENGINE_CPU: true,
}).extend({
  GANTRY_ENGINE_REBUILD: envFlag()
    .default(false)
    .describe("Retry a patched engine build that failed before (otherwise the prebuilt binary is used at once)"),
  GANTRY_LLAMA_CPP_SOURCE: z
    .string()
    .optional()
    .describe(
      "An unpacked llama.cpp source tree to build from instead of node-llama-cpp's git bundle (a GPU bundle's; it names its release in .gantry-source.json)",
    ),
  // The server's setting: with a GPU backend named, the CPU-only patched build is not built.
  GANTRY_GPU: ServerConfigSchema.shape.GANTRY_GPU,
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
