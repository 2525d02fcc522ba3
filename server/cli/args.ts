// Command-line arguments: a thin, strict wrapper over node:util parseArgs whose errors read as one line.
import { parseArgs as nodeParseArgs } from "node:util";

/** A command line the command cannot take (an unknown flag, a missing argument, a value not allowed): exit code 2, as
 * for getopt-style tools, told apart from 1, a command that ran and failed. */
export class UsageError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export interface FlagSpec {
  type: "boolean" | "string";
  short?: string;
  multiple?: boolean;
}

export interface ParsedArgs {
  positionals: string[];
  flags: Record<string, string | boolean | string[] | boolean[] | undefined>;
}

/** Parses `argv` against `flags`; unknown flags and missing values are UsageErrors naming the command. */
export function parseArgs(command: string, argv: readonly string[], flags: Record<string, FlagSpec>): ParsedArgs {
  try {
    const { values, positionals } = nodeParseArgs({
      args: [...argv],
      options: flags,
      allowPositionals: true,
      strict: true,
    });
    return { positionals, flags: values as ParsedArgs["flags"] };
  } catch (e) {
    throw new UsageError(`${command}: ${argsErrorMessage(e instanceof Error ? e.message : String(e))}`);
  }
}

/** node:util parseArgs's error as one line a user can act on. Pure. */
function argsErrorMessage(msg: string): string {
  // "Option '-f, --file <value>' argument missing"
  const missing = /^Option '([^' ]+?),? ?(--[^' ]+)? <value>' argument missing/.exec(msg);
  if (missing) return `flag ${missing[2] ?? missing[1]} needs a value`;
  // "Option '--auth' argument is ambiguous.\nDid you forget ...": the next word was another flag.
  const ambiguous = /^Option '([^']+)' argument is ambiguous/.exec(msg);
  if (ambiguous)
    return `flag ${ambiguous[1]} needs a value (one that starts with a dash is written ${ambiguous[1]}=-value)`;
  // Node appends a hint about "--" to unknown-option errors; the first sentence is the useful part.
  return /^(.*?')\. /.exec(msg)?.[1] ?? msg.split("\n")[0]!;
}

/** Exactly `n` positionals (names used in the message), else a UsageError with the usage line. */
export function expectPositionals(positionals: readonly string[], names: readonly string[], usage: string): string[] {
  if (positionals.length < names.length)
    throw new UsageError(`missing ${names.slice(positionals.length).join(" and ")} (usage: ${usage})`);
  if (positionals.length > names.length)
    throw new UsageError(`unexpected argument "${positionals[names.length]}" (usage: ${usage})`);
  return [...positionals];
}

export const stringFlag = (v: ParsedArgs["flags"][string]): string | undefined =>
  typeof v === "string" ? v : undefined;
export const boolFlag = (v: ParsedArgs["flags"][string]): boolean => v === true;

/** A flag whose value is one of `allowed` (undefined when not given), else a UsageError listing them. */
export function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${flag} must be one of ${allowed.join(", ")} (not "${value}")`);
  return value as T;
}
