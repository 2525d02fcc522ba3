// The parsed form of a Go text/template, close to Go's text/template/parse node set. Offsets (`pos`, `end`)
// point into the source so errors can name a line and column and quote the failing expression.

export interface Span {
  pos: number;
  end: number;
}

export type ArgNode =
  | (Span & { type: "field"; path: string[] }) // .A.B, looked up on dot
  | (Span & { type: "variable"; name: string; path: string[] }) // $ / $x / $x.A.B
  | (Span & { type: "dot" })
  | (Span & { type: "identifier"; name: string }) // a function name
  | (Span & { type: "string"; value: string })
  | (Span & { type: "number"; value: number })
  | (Span & { type: "bool"; value: boolean })
  | (Span & { type: "nil" })
  | (Span & { type: "pipe"; pipe: PipeNode }) // ( pipeline )
  | (Span & { type: "chain"; node: ArgNode; path: string[] }); // (pipeline).A.B

export interface CommandNode extends Span {
  args: ArgNode[];
}

export interface PipeNode extends Span {
  /** Variables declared (`:=`) or assigned (`=`) by the pipeline; for range, [element] or [index, element]. */
  decl: string[];
  isAssign: boolean;
  cmds: CommandNode[];
}

export interface BranchFields extends Span {
  pipe: PipeNode;
  list: Node[];
  elseList: Node[] | null;
}

export type Node =
  | (Span & { type: "text"; text: string })
  | (Span & { type: "action"; pipe: PipeNode })
  | (BranchFields & { type: "if" })
  | (BranchFields & { type: "range" })
  | (BranchFields & { type: "with" })
  | (Span & { type: "break" })
  | (Span & { type: "continue" });

/** A parsed template; reusable across renders. */
export interface Template {
  source: string;
  root: Node[];
}
