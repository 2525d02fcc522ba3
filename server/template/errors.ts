import { AppError } from "../common/errors.ts";

/** 1-based line and column of an offset in the template source. */
export function positionOf(src: string, offset: number): { line: number; col: number } {
  const before = src.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, col: offset - lineStart + 1 };
}

/** A template that does not parse, or fails while rendering. Message: "template:LINE:COL: what went wrong". */
export class TemplateError extends AppError {
  readonly line: number;
  readonly col: number;

  constructor(src: string, offset: number, message: string) {
    const { line, col } = positionOf(src, offset);
    super("TEMPLATE_ERROR", `template:${line}:${col}: ${message}`);
    this.name = "TemplateError";
    this.line = line;
    this.col = col;
  }
}
