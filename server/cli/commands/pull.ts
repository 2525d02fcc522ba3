import { expectPositionals, parseArgs } from "../args.ts";
import type { Command } from "../context.ts";
import { pullModel } from "../show-progress.ts";

export const pullCommand: Command = {
  name: "pull",
  usage: "gantry pull <model>",
  summary: "Pull a model from the hub (hf.co/<org>/<repo>[:<quant>])",
  async run(args, ctx) {
    const [model] = expectPositionals(
      parseArgs("pull", args, { insecure: { type: "boolean" } }).positionals,
      ["model"],
      this.usage,
    );
    await ctx.ensureServer();
    await pullModel(ctx, model!);
  },
};
