// Modelfile parser: an explicit state machine over characters, in the manner of Ollama's parser/parser.go.
// Grammar, one command per logical line:
//   line     := ws* ( "#" anything | KEYWORD ws+ args ) newline
//   args     := value | PARAM_NAME ws+ value | ROLE ws+ value        (PARAMETER / MESSAGE)
//   value    := bare text to end of line (trailing whitespace trimmed)
//             | '"' chars with \" \\ \n \t \r escapes '"'              (may span lines)
//             | '"""' raw text, may span lines '"""'
// Keywords, parameter names and roles are case-insensitive.
import { ModelfileSyntaxError } from "./errors.ts";
import { isParameterName, parseParameterValue } from "./parameters.ts";
import { COMMAND_NAMES, MESSAGE_ROLES } from "./types.ts";
import type { Command, CommandName, MessageRole, Modelfile } from "./types.ts";

type State =
  | "lineStart" // between commands: skipping blank space
  | "comment" // inside a # line
  | "keyword" // reading the command word
  | "beforeArg" // spaces after the keyword
  | "paramName" // PARAMETER <name>
  | "roleName" // MESSAGE <role>
  | "beforeValue" // spaces before the value
  | "bare" // unquoted value
  | "quoted" // "..."
  | "quotedEscape" // just read a backslash inside "..."
  | "triple" // """..."""
  | "afterQuote"; // after a closing quote: only trailing spaces allowed

const EOF = "";
const isBlank = (ch: string) => ch === " " || ch === "\t";
const isNewline = (ch: string) => ch === "\n";
const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", '"': '"', "\\": "\\" };

/** What the value is missing, phrased per command, e.g. "PARAMETER needs a name and a value". */
function missingArgs(name: CommandName): string {
  switch (name) {
    case "parameter":
      return "PARAMETER needs a name and a value";
    case "message":
      return "MESSAGE needs a role and a content";
    default:
      return `${name.toUpperCase()} needs a value`;
  }
}

const isCommandName = (word: string): word is CommandName => (COMMAND_NAMES as readonly string[]).includes(word);
const isRole = (word: string): word is MessageRole => (MESSAGE_ROLES as readonly string[]).includes(word);

export function parseModelfile(text: string): Modelfile {
  const src = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  const commands: Command[] = [];

  let state: State = "lineStart";
  let line = 1;
  let buf = "";
  // The command being read.
  let name = "from" as CommandName;
  let cmdLine = 1;
  let key = "";
  let role = "user" as MessageRole;
  let quoteLine = 1;

  const fail = (message: string, at = cmdLine): never => {
    throw new ModelfileSyntaxError(at, message);
  };

  const emit = (value: string): void => {
    if (name === "parameter") {
      const parsed = parseParameterValue(key, value);
      if (!parsed.ok) fail(parsed.message);
      else commands.push({ name, args: value, key, value: parsed.value });
    } else if (name === "message") {
      commands.push({ name, args: value, role, content: value });
    } else {
      if (value === "" && (name === "from" || name === "adapter" || name === "requires")) fail(missingArgs(name));
      if (name === "requires" && !/^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$/.test(value)) {
        fail(`REQUIRES must be a version like 0.14.0, got ${JSON.stringify(value)}`);
      }
      commands.push({ name, args: value });
    }
    buf = "";
  };

  // Called once the command word is complete; decides where its arguments go.
  const finishKeyword = (): void => {
    const word = buf.toLowerCase();
    if (!isCommandName(word)) fail(`unknown command ${JSON.stringify(buf)}`);
    else name = word;
    buf = "";
  };

  for (let i = 0; i <= src.length; i++) {
    const ch = i < src.length ? src[i]! : EOF;

    switch (state) {
      case "lineStart":
        if (ch === "#") state = "comment";
        else if (ch !== EOF && !isBlank(ch) && !isNewline(ch)) {
          state = "keyword";
          cmdLine = line;
          buf = ch;
        }
        break;

      case "comment":
        if (isNewline(ch)) state = "lineStart";
        break;

      case "keyword":
        if (isBlank(ch)) {
          finishKeyword();
          state = "beforeArg";
        } else if (isNewline(ch) || ch === EOF) {
          finishKeyword();
          fail(missingArgs(name));
        } else buf += ch;
        break;

      case "beforeArg":
        if (isBlank(ch)) break;
        if (isNewline(ch) || ch === EOF) fail(missingArgs(name));
        if (name === "parameter") state = "paramName";
        else if (name === "message") state = "roleName";
        else {
          state = "beforeValue";
          i--; // the value starts at this character
          break;
        }
        buf = ch;
        break;

      case "paramName":
        if (isBlank(ch)) {
          key = buf.toLowerCase();
          if (!isParameterName(key)) fail(`unknown parameter ${JSON.stringify(buf)}`);
          buf = "";
          state = "beforeValue";
        } else if (isNewline(ch) || ch === EOF) fail(missingArgs(name));
        else buf += ch;
        break;

      case "roleName":
        if (isBlank(ch)) {
          const word = buf.toLowerCase();
          if (!isRole(word)) fail(`MESSAGE role must be one of system, user, assistant, got ${JSON.stringify(buf)}`);
          else role = word;
          buf = "";
          state = "beforeValue";
        } else if (isNewline(ch) || ch === EOF) fail(missingArgs(name));
        else buf += ch;
        break;

      case "beforeValue":
        if (isBlank(ch)) break;
        if (isNewline(ch) || ch === EOF) fail(missingArgs(name));
        quoteLine = line;
        if (ch === '"' && src.startsWith('"""', i)) {
          state = "triple";
          i += 2;
        } else if (ch === '"') state = "quoted";
        else {
          state = "bare";
          buf = ch;
        }
        break;

      case "bare":
        if (isNewline(ch) || ch === EOF) {
          emit(buf.trimEnd());
          state = "lineStart";
        } else buf += ch;
        break;

      case "quoted":
        if (ch === EOF) fail("unterminated quoted string", quoteLine);
        else if (ch === "\\") state = "quotedEscape";
        else if (ch === '"') state = "afterQuote";
        else buf += ch;
        break;

      case "quotedEscape":
        if (ch === EOF) fail("unterminated quoted string", quoteLine);
        // Unknown escapes keep their backslash, so Windows paths in quotes survive.
        buf += ESCAPES[ch] ?? `\\${ch}`;
        state = "quoted";
        break;

      case "triple":
        if (ch === EOF) fail("unterminated triple-quoted string", quoteLine);
        else if (src.startsWith('"""', i)) {
          state = "afterQuote";
          i += 2;
        } else buf += ch;
        break;

      case "afterQuote":
        if (isNewline(ch) || ch === EOF) {
          emit(buf);
          state = "lineStart";
        } else if (!isBlank(ch))
          fail(`unexpected text after closing quote: ${JSON.stringify(src.slice(i).split("\n")[0])}`, line);
        break;
    }

    if (isNewline(ch)) line++;
  }

  if (!commands.some((c) => c.name === "from")) throw new ModelfileSyntaxError(null, "no FROM line");
  return { commands };
}
