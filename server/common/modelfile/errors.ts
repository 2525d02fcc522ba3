import { AppError } from "../errors.ts";

/** A Modelfile that cannot be parsed. `line` is 1-based, or null for whole-file problems ("no FROM line"). */
export class ModelfileSyntaxError extends AppError {
  readonly line: number | null;

  constructor(line: number | null, message: string) {
    super("MODELFILE_SYNTAX", line === null ? message : `line ${line}: ${message}`);
    this.name = "ModelfileSyntaxError";
    this.line = line;
  }
}
