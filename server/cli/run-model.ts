// The model `gantry run` talks to, made ready on the server first: a local GGUF imported (its blob uploaded when the
// server lacks it), a hub model pulled with progress when the store does not have it yet.
import type { ShowResponse } from "../api/store-schemas.ts";
import { ApiError } from "../api/client.ts";
import { isHubRef } from "../common/hub-ref.ts";
import type { CliContext } from "./context.ts";
import { isGgufPath, modelNameForFile, resolveUserPath, uploadFiles } from "./local-model.ts";
import { pullModel } from "./show-progress.ts";

/** A local GGUF becomes a model named after the file (blob uploaded if the server lacks it). */
async function importGguf(ctx: CliContext, ref: string): Promise<string> {
  const file = resolveUserPath(ref, ctx.cwd);
  const name = modelNameForFile(file);
  const files = await uploadFiles(ctx.client, [file], (l) => ctx.say(l));
  for await (const p of ctx.client.create({ model: name, files })) void p;
  return name;
}

/**
 * The model to chat with, imported or pulled first when needed, and what /api/show says about it. `beforePull` is
 * called when a hub model is not in the store yet, before its download starts.
 */
export async function resolveRunModel(
  ctx: CliContext,
  ref: string,
  beforePull?: (name: string) => void,
): Promise<{ name: string; show: ShowResponse }> {
  const name = isGgufPath(ref) ? await importGguf(ctx, ref) : ref;
  try {
    return { name, show: await ctx.client.show(name) };
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404 && isHubRef(name))) throw e;
  }
  beforePull?.(name);
  await pullModel(ctx, name);
  return { name, show: await ctx.client.show(name) };
}
