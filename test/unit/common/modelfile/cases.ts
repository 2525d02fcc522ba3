// Table of Modelfile sources and what they parse to (or the error they raise). Shared by the parser tests
// and the formatter's round-trip property test.
import type { Command } from "../../../../server/common/modelfile/types.ts";

export interface ValidCase {
  name: string;
  src: string;
  want: Command[];
}

export interface ErrorCase {
  name: string;
  src: string;
  /** The full error message, including "line N: " when the error has a line. */
  message: string;
  line: number | null;
}

const from = (args: string): Command => ({ name: "from", args });
const text = (name: "template" | "system" | "adapter" | "license" | "requires", args: string): Command => ({
  name,
  args,
});
const param = (key: string, args: string, value: number | boolean | string): Command => ({
  name: "parameter",
  key,
  args,
  value,
});
const message = (role: "system" | "user" | "assistant", content: string): Command => ({
  name: "message",
  role,
  args: content,
  content,
});

const SEED_TEMPLATE =
  "<|startoftext|><|im_start|>system\n{{ .System }}<|im_end|>\n<|im_start|>user\n{{ .Prompt }}<|im_end|>\n<|im_start|>assistant\n";

/** Every parameter Ollama accepts, with a valid value of its type. */
export const ALL_PARAMETERS: ReadonlyArray<[key: string, args: string, value: number | boolean | string]> = [
  ["num_ctx", "4096", 4096],
  ["draft_model", "smollm2-draft", "smollm2-draft"],
  ["draft_ngram", "8", 8],
  ["draft_min", "2", 2],
  ["num_keep", "24", 24],
  ["num_predict", "-1", -1],
  ["temperature", "0.8", 0.8],
  ["top_p", "0.9", 0.9],
  ["top_k", "40", 40],
  ["min_p", "0.05", 0.05],
  ["typical_p", "1.0", 1],
  ["seed", "42", 42],
  ["stop", "</s>", "</s>"],
  ["repeat_penalty", "1.1", 1.1],
  ["repeat_last_n", "64", 64],
  ["presence_penalty", "0.5", 0.5],
  ["frequency_penalty", "-0.5", -0.5],
  ["penalize_newline", "false", false],
  ["mirostat", "2", 2],
  ["mirostat_eta", "0.1", 0.1],
  ["mirostat_tau", "5.0", 5],
  ["tfs_z", "1", 1],
  ["num_batch", "512", 512],
  ["num_gpu", "99", 99],
  ["main_gpu", "0", 0],
  ["use_mmap", "true", true],
  ["num_thread", "8", 8],
  ["numa", "False", false],
];

export const VALID_CASES: ValidCase[] = [
  { name: "minimal FROM with a model name", src: "FROM llama3.2", want: [from("llama3.2")] },
  { name: "lower-case keyword and a tag", src: "from llama3.2:1b\n", want: [from("llama3.2:1b")] },
  { name: "mixed-case keyword", src: "FrOm qwen2.5", want: [from("qwen2.5")] },
  { name: "FROM a relative GGUF path", src: "FROM ./models/tiny.gguf\n", want: [from("./models/tiny.gguf")] },
  {
    name: "FROM an hf.co reference",
    src: "FROM hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
    want: [from("hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M")],
  },
  {
    name: "comments and blank lines are skipped",
    src: "# header\n\nFROM x\n   # indented comment\n\n",
    want: [from("x")],
  },
  {
    name: "trailing whitespace is trimmed",
    src: "FROM x   \t\nSYSTEM hello  \n",
    want: [from("x"), text("system", "hello")],
  },
  { name: "leading whitespace before a keyword", src: "   FROM x\n\tSYSTEM y", want: [from("x"), text("system", "y")] },
  { name: "CRLF line endings", src: 'FROM x\r\nSYSTEM """a\r\nb"""\r\n', want: [from("x"), text("system", "a\nb")] },
  { name: "a byte-order mark is ignored", src: "\uFEFFFROM x", want: [from("x")] },
  {
    name: "bare SYSTEM of several words",
    src: "FROM x\nSYSTEM You are Mario from Super Mario Bros.",
    want: [from("x"), text("system", "You are Mario from Super Mario Bros.")],
  },
  {
    name: "double-quoted value with escapes",
    src: 'FROM x\nSYSTEM "say \\"hi\\"\\n\\tnow \\\\ done"',
    want: [from("x"), text("system", 'say "hi"\n\tnow \\ done')],
  },
  {
    name: "double-quoted value spanning lines",
    src: 'FROM x\nSYSTEM "one\ntwo"\nPARAMETER seed 1',
    want: [from("x"), text("system", "one\ntwo"), param("seed", "1", 1)],
  },
  {
    name: "triple-quoted multi-line SYSTEM",
    src: 'FROM x\nSYSTEM """\nYou are helpful.\nBe brief.\n"""\n',
    want: [from("x"), text("system", "\nYou are helpful.\nBe brief.\n")],
  },
  {
    name: "triple-quoted TEMPLATE keeps inner quotes",
    src: 'FROM x\nTEMPLATE """{{ if eq .Role "user" }}U{{ end }}"""',
    want: [from("x"), text("template", '{{ if eq .Role "user" }}U{{ end }}')],
  },
  {
    name: "triple-quoted on one line",
    src: 'FROM x\nSYSTEM """hi there"""',
    want: [from("x"), text("system", "hi there")],
  },
  {
    name: "triple quotes keep surrounding whitespace",
    src: 'FROM x\nSYSTEM """  padded\t"""',
    want: [from("x"), text("system", "  padded\t")],
  },
  { name: "empty quoted SYSTEM", src: 'FROM x\nSYSTEM ""', want: [from("x"), text("system", "")] },
  {
    name: "unknown escapes keep their backslash",
    src: 'FROM x\nADAPTER "C:\\models\\lora.gguf"',
    want: [from("x"), text("adapter", "C:\\models\\lora.gguf")],
  },
  {
    name: "integer parameter",
    src: "FROM x\nPARAMETER num_ctx 4096",
    want: [from("x"), param("num_ctx", "4096", 4096)],
  },
  {
    name: "float parameter",
    src: "FROM x\nPARAMETER temperature 0.7",
    want: [from("x"), param("temperature", "0.7", 0.7)],
  },
  {
    name: "float parameter in exponent form",
    src: "FROM x\nPARAMETER min_p 1e-3",
    want: [from("x"), param("min_p", "1e-3", 0.001)],
  },
  {
    name: "float parameter written as an integer",
    src: "FROM x\nPARAMETER temperature 1",
    want: [from("x"), param("temperature", "1", 1)],
  },
  {
    name: "negative integer parameter",
    src: "FROM x\nPARAMETER num_predict -1",
    want: [from("x"), param("num_predict", "-1", -1)],
  },
  {
    name: "boolean parameters in Go spellings",
    src: "FROM x\nPARAMETER penalize_newline true\nPARAMETER use_mmap F\nPARAMETER numa 1",
    want: [from("x"), param("penalize_newline", "true", true), param("use_mmap", "F", false), param("numa", "1", true)],
  },
  {
    name: "repeated stop parameters keep their order",
    src: 'FROM x\nPARAMETER stop "User:"\nPARAMETER stop "Assistant:"',
    want: [from("x"), param("stop", "User:", "User:"), param("stop", "Assistant:", "Assistant:")],
  },
  {
    name: "stop with spaces inside quotes",
    src: 'FROM x\nPARAMETER stop " ### "',
    want: [from("x"), param("stop", " ### ", " ### ")],
  },
  {
    name: "parameter names are case-insensitive",
    src: "FROM x\nPARAMETER Temperature 0.5\nparameter TOP_K 10",
    want: [from("x"), param("temperature", "0.5", 0.5), param("top_k", "10", 10)],
  },
  {
    name: "tabs separate keyword, name and value",
    src: "FROM\tx\nPARAMETER\ttemperature\t0.5",
    want: [from("x"), param("temperature", "0.5", 0.5)],
  },
  {
    name: "every parameter Ollama accepts",
    src: `FROM x\n${ALL_PARAMETERS.map(([k, a]) => `PARAMETER ${k} ${a}`).join("\n")}\n`,
    want: [from("x"), ...ALL_PARAMETERS.map(([k, a, v]) => param(k, a, v))],
  },
  {
    name: "MESSAGE for each role",
    src: "FROM x\nMESSAGE system Be terse.\nMESSAGE user Is Toronto in Canada?\nMESSAGE assistant yes",
    want: [
      from("x"),
      message("system", "Be terse."),
      message("user", "Is Toronto in Canada?"),
      message("assistant", "yes"),
    ],
  },
  {
    name: "MESSAGE role is case-insensitive",
    src: "FROM x\nMESSAGE User hi",
    want: [from("x"), message("user", "hi")],
  },
  {
    name: "MESSAGE with triple-quoted content",
    src: 'FROM x\nMESSAGE assistant """line 1\nline 2"""',
    want: [from("x"), message("assistant", "line 1\nline 2")],
  },
  {
    name: "several LICENSE blocks",
    src: 'FROM x\nLICENSE """MIT\nCopyright"""\nLICENSE Apache-2.0',
    want: [from("x"), text("license", "MIT\nCopyright"), text("license", "Apache-2.0")],
  },
  {
    name: "ADAPTER and REQUIRES",
    src: "FROM x\nADAPTER ./lora.gguf\nREQUIRES 0.14.0",
    want: [from("x"), text("adapter", "./lora.gguf"), text("requires", "0.14.0")],
  },
  {
    name: "commands in any order, FROM last",
    src: "SYSTEM first\nPARAMETER seed 7\nFROM y",
    want: [text("system", "first"), param("seed", "7", 7), from("y")],
  },
  {
    name: "spaces after a closing quote",
    src: 'FROM x\nSYSTEM "quoted"   \nPARAMETER seed 1',
    want: [from("x"), text("system", "quoted"), param("seed", "1", 1)],
  },
  {
    name: "# inside a value is not a comment",
    src: "FROM x\nSYSTEM use # signs freely",
    want: [from("x"), text("system", "use # signs freely")],
  },
  {
    name: "quotes inside a bare value stay",
    src: 'FROM x\nSYSTEM say "hi" please',
    want: [from("x"), text("system", 'say "hi" please')],
  },
  {
    name: "triple-quoted value starting with a quote",
    src: 'FROM x\nSYSTEM """"quoted" start\nnext"""',
    want: [from("x"), text("system", '"quoted" start\nnext')],
  },
  {
    name: "the seed Modelfile",
    src: `FROM ./model.gguf\nTEMPLATE """${SEED_TEMPLATE}"""\nPARAMETER temperature 0.7\nPARAMETER top_p 0.9\nPARAMETER stop "<|im_end|>"\nPARAMETER stop "<|endoftext|>"\n`,
    want: [
      from("./model.gguf"),
      text("template", SEED_TEMPLATE),
      param("temperature", "0.7", 0.7),
      param("top_p", "0.9", 0.9),
      param("stop", "<|im_end|>", "<|im_end|>"),
      param("stop", "<|endoftext|>", "<|endoftext|>"),
    ],
  },
];

export const ERROR_CASES: ErrorCase[] = [
  { name: "misspelled keyword", src: "FORM llama3", message: 'line 1: unknown command "FORM"', line: 1 },
  {
    name: "unknown keyword on a later line",
    src: "FROM x\n# ok\nPROMPT hi",
    message: 'line 3: unknown command "PROMPT"',
    line: 3,
  },
  { name: "keyword with non-letters", src: "FROM x\nFROM-x y", message: 'line 2: unknown command "FROM-x"', line: 2 },
  {
    name: "PARAMETER without a value",
    src: "FROM x\nPARAMETER temperature",
    message: "line 2: PARAMETER needs a name and a value",
    line: 2,
  },
  {
    name: "PARAMETER without a name",
    src: "FROM x\nPARAMETER\n",
    message: "line 2: PARAMETER needs a name and a value",
    line: 2,
  },
  {
    name: "PARAMETER with a name and only spaces",
    src: "FROM x\nPARAMETER seed   \n",
    message: "line 2: PARAMETER needs a name and a value",
    line: 2,
  },
  {
    name: "unknown parameter",
    src: "FROM x\n\nPARAMETER temprature 0.7",
    message: 'line 3: unknown parameter "temprature"',
    line: 3,
  },
  {
    name: "integer parameter with a unit",
    src: "FROM x\nPARAMETER num_ctx 4k",
    message: 'line 2: invalid value for num_ctx: expected an integer, got "4k"',
    line: 2,
  },
  {
    name: "integer parameter given a float",
    src: "FROM x\nPARAMETER top_k 1.5",
    message: 'line 2: invalid value for top_k: expected an integer, got "1.5"',
    line: 2,
  },
  {
    name: "float parameter given a word",
    src: "FROM x\nPARAMETER temperature hot",
    message: 'line 2: invalid value for temperature: expected a number, got "hot"',
    line: 2,
  },
  {
    name: "boolean parameter given yes",
    src: "FROM x\nPARAMETER use_mmap yes",
    message: 'line 2: invalid value for use_mmap: expected true or false, got "yes"',
    line: 2,
  },
  {
    name: "empty stop sequence",
    src: 'FROM x\nPARAMETER stop ""',
    message: "line 2: invalid value for stop: must not be empty",
    line: 2,
  },
  {
    name: "unterminated triple-quoted string names its first line",
    src: 'FROM x\n# c\n\nSYSTEM hi\nTEMPLATE """{{ .Prompt }}\nmore\n',
    message: "line 5: unterminated triple-quoted string",
    line: 5,
  },
  {
    name: "unterminated quoted string",
    src: 'FROM x\nSYSTEM "open',
    message: "line 2: unterminated quoted string",
    line: 2,
  },
  {
    name: "MESSAGE with an unknown role",
    src: "FROM x\nMESSAGE tool result",
    message: 'line 2: MESSAGE role must be one of system, user, assistant, got "tool"',
    line: 2,
  },
  {
    name: "MESSAGE without content",
    src: "FROM x\nMESSAGE user\n",
    message: "line 2: MESSAGE needs a role and a content",
    line: 2,
  },
  { name: "no FROM line", src: "SYSTEM hi\nPARAMETER seed 1\n", message: "no FROM line", line: null },
  { name: "empty Modelfile", src: "", message: "no FROM line", line: null },
  { name: "only comments", src: "# nothing\n# here\n", message: "no FROM line", line: null },
  { name: "FROM without a value", src: "FROM\nSYSTEM x", message: "line 1: FROM needs a value", line: 1 },
  { name: "FROM with an empty quoted value", src: 'SYSTEM x\nFROM ""', message: "line 2: FROM needs a value", line: 2 },
  { name: "keyword alone at end of file", src: "FROM x\nSYSTEM", message: "line 2: SYSTEM needs a value", line: 2 },
  {
    name: "text after a closing quote",
    src: 'FROM x\nSYSTEM "a" b',
    message: 'line 2: unexpected text after closing quote: "b"',
    line: 2,
  },
  {
    name: "text after a closing triple quote on its line",
    src: 'FROM x\nSYSTEM """a\nb""" c',
    message: 'line 3: unexpected text after closing quote: "c"',
    line: 3,
  },
  {
    name: "REQUIRES that is not a version",
    src: "FROM x\nREQUIRES latest",
    message: 'line 2: REQUIRES must be a version like 0.14.0, got "latest"',
    line: 2,
  },
];
