// Streams one chat answer to stdout token by token, and builds user turns (text plus attached images).
import fs from "node:fs";
import type { ChatMessage, ChatRequest } from "../api/client.ts";
import type { CliContext } from "./context.ts";
import { extractImagePaths } from "./images.ts";
import { resolveUserPath } from "./local-model.ts";

export interface AnswerStats {
  evalCount: number;
  evalDurationNs: number;
  totalDurationNs: number;
  promptEvalCount: number;
}

/** Dim text on a terminal (ANSI faint), as Ollama's CLI shows thinking; plain text elsewhere. */
const DIM = "\x1b[2m",
  UNDIM = "\x1b[22m";

/**
 * Writes each content chunk as it arrives (one write per chunk, so a pipe sees tokens as they come). A thinking
 * model's thinking comes first, dimmed, between "Thinking..." and "...done thinking." as Ollama's CLI shows it.
 */
export async function streamAnswer(
  ctx: CliContext,
  req: ChatRequest,
  signal?: AbortSignal,
): Promise<{ text: string; stats: AnswerStats | null }> {
  let text = "";
  let stats: AnswerStats | null = null;
  const [dim, undim] = ctx.stdout.isTTY ? [DIM, UNDIM] : ["", ""];
  let thinking = false;
  const endThinking = () => {
    if (thinking) ctx.stdout.write(`\n...done thinking.${undim}\n\n`);
    thinking = false;
  };
  try {
    for await (const chunk of ctx.client.chat(req, signal)) {
      const thought = chunk.message?.thinking ?? "";
      if (thought) {
        if (!thinking) ctx.stdout.write(`${dim}Thinking...\n`);
        thinking = true;
        ctx.stdout.write(thought);
      }
      const piece = chunk.message?.content ?? "";
      if (piece) endThinking();
      if (chunk.done) endThinking();
      if (piece) {
        text += piece;
        ctx.stdout.write(piece);
      }
      if (chunk.done) {
        stats = {
          evalCount: chunk.eval_count ?? 0,
          evalDurationNs: chunk.eval_duration ?? 0,
          totalDurationNs: chunk.total_duration ?? 0,
          promptEvalCount: chunk.prompt_eval_count ?? 0,
        };
      }
    }
  } finally {
    // Cancelled while thinking: the terminal's text is not left dim.
    if (thinking) ctx.stdout.write(undim);
  }
  return { text, stats };
}

export function formatStats(s: AnswerStats): string {
  const rate = s.evalDurationNs > 0 ? (s.evalCount * 1e9) / s.evalDurationNs : 0;
  return (
    `total duration:       ${(s.totalDurationNs / 1e6).toFixed(1)}ms\nprompt eval count:    ${s.promptEvalCount} token(s)\n` +
    `eval count:           ${s.evalCount} token(s)\neval rate:            ${rate.toFixed(2)} tokens/s\n`
  );
}

const readImage = (file: string): string => {
  try {
    return fs.readFileSync(file).toString("base64");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(
      `cannot read image ${file}: ${code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : (e as Error).message}`,
      { cause: e },
    );
  }
};

/** A user turn: image paths written in the text are attached (base64) and removed from the text. */
export function userTurn(
  ctx: Pick<CliContext, "cwd" | "say">,
  text: string,
  extraImages: readonly string[] = [],
): ChatMessage {
  const found = extractImagePaths(
    text,
    (p) => resolveUserPath(p, ctx.cwd),
    (p) => fs.statSync(p, { throwIfNoEntry: false })?.isFile() === true,
  );
  // A missing image is an error of the whole turn (nothing is sent), not a path quietly asked about as text.
  if (found.missing.length > 0) throw new Error(`cannot read image ${found.missing[0]}: no such file`);
  const files = [...extraImages, ...found.paths];
  const images = files.map(readImage);
  for (const f of files) ctx.say(`Added image '${f}'`);
  return {
    role: "user",
    content: files.length > 0 ? found.prompt : text,
    ...(files.length > 0 ? { images } : {}),
  };
}
