import { parseArgs, UsageError } from "../args.ts";
import type { Command } from "../context.ts";
import { formatBytes, formatTable, relativeTime, shortId } from "../format.ts";

export const listCommand: Command = {
  name: "list",
  aliases: ["ls"],
  usage: "gantry list",
  summary: "List models",
  async run(args, ctx) {
    const { positionals } = parseArgs("list", args, {});
    if (positionals.length > 0) throw new UsageError(`list takes no arguments (usage: ${this.usage})`);
    const { models } = await ctx.client.list();
    const now = new Date();
    const rows = models.map((m) => [
      m.name,
      shortId(m.digest),
      formatBytes(m.size),
      relativeTime(new Date(m.modified_at), now),
    ]);
    ctx.stdout.write(formatTable(["NAME", "ID", "SIZE", "MODIFIED"], rows));
  },
};
