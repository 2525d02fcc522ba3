// Drains an NDJSON progress stream (pull, create) into a ProgressDisplay on stderr.
import type { Progress } from "../api/store-schemas.ts";
import type { CliContext } from "./context.ts";
import { ProgressDisplay } from "./progress.ts";

export async function showProgress(ctx: CliContext, stream: AsyncIterable<Progress>): Promise<void> {
  const display = new ProgressDisplay({ write: (t) => ctx.stderr.write(t), isTTY: ctx.stderr.isTTY === true });
  try {
    for await (const p of stream) display.update(p);
  } finally {
    display.finish();
  }
}

export async function pullModel(ctx: CliContext, model: string): Promise<void> {
  await showProgress(ctx, ctx.client.pull({ model }));
}
