import { expectPositionals, parseArgs } from "../args.ts";
import type { Command } from "../context.ts";

export const stopCommand: Command = {
  name: "stop",
  usage: "gantry stop <model>",
  summary: "Unload a running model",
  async run(args, ctx) {
    const [model] = expectPositionals(parseArgs("stop", args, {}).positionals, ["model"], this.usage);
    // A generate without a prompt and keep_alive 0 unloads the model (Ollama's protocol).
    for await (const chunk of ctx.client.generate({ model: model!, keep_alive: 0 })) void chunk;
  },
};
