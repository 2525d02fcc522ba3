// Conversions between a Modelfile and Ollama's API bodies: the POST /api/create body `gantry create` sends,
// and the reverse for `gantry show --modelfile`, built from what /api/show returns.
import { AppError } from "../errors.ts";
import { ModelfileSyntaxError } from "./errors.ts";
import { REPEATABLE_PARAMETERS, parseParameterValue } from "./parameters.ts";
import type { Command, MessageRole, Modelfile, ParameterValue } from "./types.ts";
import { isLocalPath } from "../model-ref.ts";

export interface CreateMessage {
  role: MessageRole;
  content: string;
}

export type CreateParameters = Record<string, ParameterValue | string[]>;

/** Body of POST /api/create (Gantry form: local files are sent as resolved paths). */
export interface CreateRequestBody {
  /** A model name, an hf.co reference, or an absolute GGUF path. */
  from: string;
  template?: string;
  system?: string;
  parameters?: CreateParameters;
  messages?: CreateMessage[];
  license?: string | string[];
  adapters?: string[];
  /** A vision model's projector (mmproj GGUF): a second FROM line naming a local file. */
  projector?: string;
  requires?: string;
}

export interface CreateRequestOptions {
  /** Makes a path from the Modelfile absolute, relative to the Modelfile's directory (and expands "~"). */
  resolvePath(path: string): string;
}

export function toCreateRequest(mf: Modelfile, opts: CreateRequestOptions): CreateRequestBody {
  let from: string | undefined;
  const body: Omit<CreateRequestBody, "from"> = {};
  const parameters: CreateParameters = {};
  const messages: CreateMessage[] = [];
  const licenses: string[] = [];
  const adapters: string[] = [];

  // Single-valued commands: the last one wins, as in Ollama.
  for (const c of mf.commands) {
    switch (c.name) {
      case "from":
        // A second FROM naming a local GGUF is the projector of a vision model (as in Ollama); otherwise the last wins.
        if (from !== undefined && isLocalPath(c.args)) body.projector = opts.resolvePath(c.args);
        else from = isLocalPath(c.args) ? opts.resolvePath(c.args) : c.args;
        break;
      case "template":
        body.template = c.args;
        break;
      case "system":
        body.system = c.args;
        break;
      case "requires":
        body.requires = c.args;
        break;
      case "license":
        licenses.push(c.args);
        break;
      case "adapter":
        adapters.push(opts.resolvePath(c.args));
        break;
      case "message":
        messages.push({ role: c.role, content: c.content });
        break;
      case "parameter":
        if (REPEATABLE_PARAMETERS.has(c.key)) {
          const list = parameters[c.key];
          parameters[c.key] = [...(Array.isArray(list) ? list : []), String(c.value)];
        } else parameters[c.key] = c.value;
        break;
    }
  }

  if (from === undefined) throw new ModelfileSyntaxError(null, "no FROM line");
  return {
    from,
    ...body,
    ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
    ...(messages.length > 0 ? { messages } : {}),
    ...(licenses.length === 1 ? { license: licenses[0] } : licenses.length > 1 ? { license: licenses } : {}),
    ...(adapters.length > 0 ? { adapters } : {}),
  };
}

/** What `gantry show --modelfile` knows about a model (fields of the /api/show response and manifest layers). */
export interface ShowInput {
  from: string;
  template?: string;
  system?: string;
  parameters?: Record<string, unknown>;
  messages?: ReadonlyArray<{ role: string; content: string }>;
  license?: string | readonly string[];
}

function parameterCommands(parameters: Record<string, unknown>): Command[] {
  const commands: Command[] = [];
  for (const key of Object.keys(parameters).sort()) {
    const raw = parameters[key];
    for (const item of Array.isArray(raw) ? raw : [raw]) {
      const args = String(item);
      const parsed = parseParameterValue(key, args);
      if (!parsed.ok) throw new AppError("BAD_REQUEST", `cannot print parameter: ${parsed.message}`, { param: key });
      commands.push({ name: "parameter", key, args, value: parsed.value });
    }
  }
  return commands;
}

/** Builds the Modelfile that recreates a model: FROM, TEMPLATE, SYSTEM, PARAMETERs (sorted), MESSAGEs, LICENSEs. */
export function modelfileFromShow(show: ShowInput): Modelfile {
  const commands: Command[] = [{ name: "from", args: show.from }];
  if (show.template) commands.push({ name: "template", args: show.template });
  if (show.system) commands.push({ name: "system", args: show.system });
  commands.push(...parameterCommands(show.parameters ?? {}));
  for (const m of show.messages ?? []) {
    if (m.role !== "system" && m.role !== "user" && m.role !== "assistant") {
      throw new AppError("BAD_REQUEST", `cannot print message with role ${JSON.stringify(m.role)}`);
    }
    commands.push({ name: "message", role: m.role, args: m.content, content: m.content });
  }
  const licenses = show.license === undefined ? [] : typeof show.license === "string" ? [show.license] : show.license;
  for (const text of licenses) commands.push({ name: "license", args: text });
  return { commands };
}
