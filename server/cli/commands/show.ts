import { boolFlag, expectPositionals, parseArgs, UsageError } from "../args.ts";
import type { Command } from "../context.ts";
import { formatShowSummary } from "../show-summary.ts";

const PARTS = ["modelfile", "template", "parameters", "system", "license"] as const;

export const showCommand: Command = {
  name: "show",
  usage: "gantry show <model> [--<part>]",
  summary: "Show information about a model, or one part: --modelfile, --template, --parameters, --system, --license",
  async run(args, ctx) {
    const { positionals, flags } = parseArgs(
      "show",
      args,
      Object.fromEntries(PARTS.map((p) => [p, { type: "boolean" as const }])),
    );
    const [model] = expectPositionals(positionals, ["model"], this.usage);
    const chosen = PARTS.filter((p) => boolFlag(flags[p]));
    if (chosen.length > 1) throw new UsageError(`show: choose only one of ${chosen.map((p) => `--${p}`).join(", ")}`);
    const show = await ctx.client.show(model!);
    const part = chosen[0];
    if (part === undefined) {
      ctx.stdout.write(formatShowSummary(show));
      return;
    }
    const text = show[part];
    if (text === undefined || text === "") {
      if (part !== "modelfile") ctx.stderr.write(`model '${model}' has no ${part}\n`);
      return;
    }
    ctx.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
  },
};
