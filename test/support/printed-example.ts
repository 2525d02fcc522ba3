// The example request that `gantry run <file>::<export>` and `gantry deploy` print, run the way a user pastes it into
// a shell: the curl command (its continuation lines joined), with $GANTRY_API_KEY set when a key is given.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The printed curl command: from "curl " to the last line ending in a backslash's next line. */
export function printedCurl(stdout: string): string {
  const start = stdout.indexOf("curl ");
  if (start < 0) throw new Error(`no curl example in:\n${stdout}`);
  const lines: string[] = [];
  for (const line of stdout.slice(start).split("\n")) {
    lines.push(line.replace(/\\$/, ""));
    if (!line.endsWith("\\")) break;
  }
  return lines.join(" ");
}

/** Runs a curl command line in bash (GANTRY_API_KEY = key when given); its HTTP status and body. */
export async function curl(command: string, key?: string): Promise<{ status: number; body: string }> {
  const { stdout } = await run("bash", ["-c", `${command} -s -w '\\n%{http_code}'`], {
    env: { ...process.env, GANTRY_API_KEY: key ?? "" },
  });
  const at = stdout.lastIndexOf("\n");
  return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at) };
}
