import fs from "node:fs";
import path from "node:path";
import type { CreateRequest } from "../../api/client.ts";
import { isLocalPath } from "../../common/model-ref.ts";
import { toCreateRequest, type CreateRequestBody } from "../../common/modelfile/to-create-request.ts";
import { parseModelfile } from "../../common/modelfile/parse.ts";
import { expectPositionals, parseArgs, stringFlag, UsageError } from "../args.ts";
import type { CliContext, Command } from "../context.ts";
import { resolveUserPath, uploadFiles } from "../local-model.ts";
import { showProgress } from "../show-progress.ts";

/** Reads and parses a Modelfile; paths in it resolve against its own directory. */
export function readModelfile(file: string): CreateRequestBody {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    throw new UsageError(`no Modelfile at ${file} (give one with -f <path>)`);
  }
  const dir = path.dirname(file);
  try {
    return toCreateRequest(parseModelfile(text), { resolvePath: (p) => resolveUserPath(p, dir) });
  } catch (e) {
    throw new Error(`${path.basename(file)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

/** The /api/create body: local model and adapter files become uploaded blobs, so a remote server works too. */
export async function toApiRequest(ctx: CliContext, name: string, body: CreateRequestBody): Promise<CreateRequest> {
  const { from, adapters, projector, requires: _requires, parameters, ...rest } = body;
  if (projector !== undefined && !isLocalPath(from))
    throw new UsageError(
      `the projector FROM ${projector} needs the model's FROM to be a local GGUF file too (not the model "${from}")`,
    );
  const base = isLocalPath(from)
    ? { files: await uploadFiles(ctx.client, projector ? [from, projector] : [from], (l) => ctx.say(l)) }
    : { from };
  const adapterMap =
    adapters && adapters.length > 0 ? { adapters: await uploadFiles(ctx.client, adapters, (l) => ctx.say(l)) } : {};
  // Parameter values were type-checked by the Modelfile parser; the server validates them again.
  return {
    model: name,
    ...base,
    ...adapterMap,
    ...rest,
    ...(parameters ? { parameters: parameters as CreateRequest["parameters"] } : {}),
  };
}

export const createCommand: Command = {
  name: "create",
  usage: "gantry create <name> [-f <Modelfile>]",
  summary: "Create a model from a Modelfile (default ./Modelfile)",
  async run(args, ctx) {
    const { positionals, flags } = parseArgs("create", args, { file: { type: "string", short: "f" } });
    const [name] = expectPositionals(positionals, ["name"], this.usage);
    const file = path.resolve(ctx.cwd, stringFlag(flags.file) ?? "Modelfile");
    const body = readModelfile(file);
    await ctx.ensureServer();
    ctx.say("gathering model components");
    await showProgress(ctx, ctx.client.create(await toApiRequest(ctx, name!, body)));
  },
};

/** Creates `name` from the model `from` with Modelfile lines on top (no FROM: an app's overrides), quietly. */
export async function createWithOverrides(ctx: CliContext, name: string, from: string, overrides: string) {
  const body = toCreateRequest(parseModelfile(`FROM ${from}\n${overrides}`), {
    resolvePath: (p) => resolveUserPath(p, ctx.cwd),
  });
  for await (const p of ctx.client.create(await toApiRequest(ctx, name, body))) void p;
}
