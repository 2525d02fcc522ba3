import type { Command } from "../context.ts";
import { VERSION } from "../../common/version.ts";

export const versionCommand: Command = {
  name: "--version",
  aliases: ["-v", "version"],
  usage: "gantry --version",
  summary: "Print the client version and, if a server answers, its version",
  async run(_args, ctx) {
    ctx.stdout.write(`gantry version ${VERSION}\n`);
    try {
      const { version, gantry } = await ctx.client.version();
      ctx.stdout.write(
        gantry
          ? `server version ${gantry} (Ollama API ${version}, ${ctx.client.baseUrl})\n`
          : `server version ${version} (${ctx.client.baseUrl})\n`,
      );
    } catch {
      ctx.stderr.write(`no server answers at ${ctx.client.baseUrl}\n`);
    }
  },
};
