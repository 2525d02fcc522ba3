// The Modelfile AST. A Modelfile is an ordered list of commands, exactly as written (order and repeats matter:
// `PARAMETER stop` repeats, later single-valued commands win when converted to a create request).

export const MESSAGE_ROLES = ["system", "user", "assistant"] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

/** A typed PARAMETER value; `stop` is a string and may repeat. */
export type ParameterValue = number | boolean | string;

/** Commands whose argument is one free-form string. */
export type TextCommandName = "from" | "template" | "system" | "adapter" | "license" | "requires";

export interface TextCommand {
  name: TextCommandName;
  /** The unquoted argument. */
  args: string;
}

export interface ParameterCommand {
  name: "parameter";
  /** The unquoted value as written, e.g. "0.70"; kept so formatting preserves the author's spelling. */
  args: string;
  key: string;
  value: ParameterValue;
}

export interface MessageCommand {
  name: "message";
  /** Same as `content`. */
  args: string;
  role: MessageRole;
  content: string;
}

export type Command = TextCommand | ParameterCommand | MessageCommand;
export type CommandName = Command["name"];

export interface Modelfile {
  commands: Command[];
}

export const COMMAND_NAMES: readonly CommandName[] = [
  "from",
  "template",
  "system",
  "parameter",
  "message",
  "adapter",
  "license",
  "requires",
];
