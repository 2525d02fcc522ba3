// Which names a template refers to. Ollama uses this to decide how to feed a template: templates that mention
// `.Messages` get the whole conversation, others get one System/Prompt/Response turn at a time.
import type { ArgNode, Node, PipeNode } from "./ast.ts";
import type { Template } from "./ast.ts";

function fromArg(arg: ArgNode, out: Set<string>): void {
  switch (arg.type) {
    case "field":
      for (const p of arg.path) out.add(p.toLowerCase());
      break;
    case "variable":
      for (const p of arg.path) out.add(p.toLowerCase());
      break;
    case "chain":
      fromArg(arg.node, out);
      for (const p of arg.path) out.add(p.toLowerCase());
      break;
    case "pipe":
      fromPipe(arg.pipe, out);
      break;
    default:
      break;
  }
}

function fromPipe(pipe: PipeNode, out: Set<string>): void {
  for (const cmd of pipe.cmds) for (const arg of cmd.args) fromArg(arg, out);
}

function fromNodes(nodes: readonly Node[], out: Set<string>): void {
  for (const n of nodes) {
    if (n.type === "action") fromPipe(n.pipe, out);
    if (n.type === "if" || n.type === "range" || n.type === "with") {
      fromPipe(n.pipe, out);
      fromNodes(n.list, out);
      if (n.elseList) fromNodes(n.elseList, out);
    }
  }
}

/** Lower-cased field names used anywhere in the template, sorted, e.g. ["content", "messages", "role"]. */
export function templateIdentifiers(tpl: Template): string[] {
  const out = new Set<string>();
  fromNodes(tpl.root, out);
  return [...out].sort();
}
