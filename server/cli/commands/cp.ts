import { expectPositionals, parseArgs } from "../args.ts";
import type { Command } from "../context.ts";

export const cpCommand: Command = {
  name: "cp",
  aliases: ["copy"],
  usage: "gantry cp <source> <destination>",
  summary: "Copy a model under a new name",
  async run(args, ctx) {
    const [source, destination] = expectPositionals(
      parseArgs("cp", args, {}).positionals,
      ["source", "destination"],
      this.usage,
    );
    await ctx.client.copy(source!, destination!);
    ctx.stdout.write(`copied '${source}' to '${destination}'\n`);
  },
};
