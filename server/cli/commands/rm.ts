import { UsageError } from "../args.ts";
import type { Command } from "../context.ts";

export const rmCommand: Command = {
  name: "rm",
  aliases: ["delete"],
  usage: "gantry rm <model>...",
  summary: "Remove models (and the blobs no other model uses)",
  async run(args, ctx) {
    if (args.length === 0) throw new UsageError(`missing model name (usage: ${this.usage})`);
    for (const model of args) {
      await ctx.client.delete(model);
      ctx.stdout.write(`deleted '${model}'\n`);
    }
  },
};
