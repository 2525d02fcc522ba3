// `<script_file>::<function>`, the hosted platform's entry-point form (`gantry run app.ts::chat`). Pure.

export interface AppRef {
  /** The file as the user wrote it. */
  file: string;
  /** The export naming the app. */
  exportName: string;
}

export const APP_FILE_EXTENSIONS = [".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"] as const;

/** Whether an argument names an app (`file::export`) rather than a model (`hf.co/org/repo:Q4_K_M`, `name:tag`). */
export const isAppRef = (arg: string): boolean => arg.includes("::");

const IDENTIFIER = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*$/u;

/** Splits `file::export`; throws an Error whose message says what is wrong with the reference. */
export function parseAppRef(arg: string): AppRef {
  const at = arg.lastIndexOf("::");
  if (at < 0) throw new Error(`"${arg}" is not <file>::<function> (e.g. examples/chat.ts::chat)`);
  const file = arg.slice(0, at),
    exportName = arg.slice(at + 2);
  if (file === "") throw new Error(`"${arg}" names no file (expected <file>::<function>, e.g. examples/chat.ts::chat)`);
  if (exportName === "")
    throw new Error(`"${arg}" names no export after "::" (expected <file>::<function>, e.g. examples/chat.ts::chat)`);
  if (!IDENTIFIER.test(exportName)) throw new Error(`"${exportName}" in "${arg}" is not a JavaScript export name`);
  return { file, exportName };
}
