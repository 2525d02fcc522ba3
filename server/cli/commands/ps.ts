import type { RunningModel } from "../../api/client.ts";
import { parseArgs, UsageError } from "../args.ts";
import type { Command } from "../context.ts";
import { formatBytes, formatTable, relativeTime, shortId } from "../format.ts";

/** PROCESSOR column, as Ollama prints it: "100% CPU", "100% GPU", or "48%/52% CPU/GPU" (shares of the size). */
export function processorText(m: Pick<RunningModel, "size" | "size_vram">): string {
  if (!m.size_vram) return "100% CPU";
  if (m.size_vram === m.size) return "100% GPU";
  if (m.size_vram > m.size || m.size <= 0) return "Unknown";
  const cpu = Math.round(((m.size - m.size_vram) / m.size) * 100);
  return `${cpu}%/${100 - cpu}% CPU/GPU`;
}

/** UNTIL column: "Forever" for keep_alive < 0, "Stopping..." once expired, else "4 minutes from now". */
export function untilText(m: Pick<RunningModel, "expires_at">, now: Date): string {
  const t = new Date(m.expires_at);
  if (Number.isNaN(t.getTime()) || t.getUTCFullYear() >= 9000) return "Forever";
  if (t.getTime() <= now.getTime()) return "Stopping...";
  return relativeTime(t, now);
}

export const psCommand: Command = {
  name: "ps",
  usage: "gantry ps",
  summary: "List running (loaded) models",
  async run(args, ctx) {
    const { positionals } = parseArgs("ps", args, {});
    if (positionals.length > 0) throw new UsageError(`ps takes no arguments (usage: ${this.usage})`);
    const { models } = await ctx.client.ps();
    const now = new Date();
    const rows = models.map((m) => [
      m.name,
      shortId(m.digest),
      formatBytes(m.size),
      processorText(m),
      String(m.context_length),
      m.kv_cache ? `${m.kv_cache.type} ${formatBytes(m.kv_cache.size)}` : "",
      untilText(m, now),
    ]);
    ctx.stdout.write(formatTable(["NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "KV CACHE", "UNTIL"], rows));
  },
};
