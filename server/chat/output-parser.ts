// Splits a model's output, as it streams, into thinking, content and tool calls: the thinking section between the
// template's tags, then the answer, in which a call opens with the format's marker (or, for a format without one, a
// JSON object at the start of the answer). Each call is reported as it is written: its name once known, then its
// arguments' JSON text in fragments, then the whole call. `trigger` tells the generation loop a call has begun (it
// then constrains the rest with the tools' grammar, fed `after`, the text already written past the marker). Pure.
import { jsonValueEnd, type ToolCallFormat } from "./features.ts";
import type { ToolCall } from "./types.ts";

export type ParsedEvent =
  | { kind: "content"; text: string }
  | { kind: "thinking"; text: string }
  | { kind: "trigger"; after: string }
  | { kind: "call-begin"; index: number; name: string }
  | { kind: "call-arguments"; index: number; text: string }
  /** A whole call; `cut`: cut short (max tokens), its arguments as far as they got. */
  | { kind: "call"; index: number; call: ToolCall; argumentsText: string; cut?: boolean };

export interface OutputParserOptions {
  /** Separate the thinking section between these tags. */
  thinking?: { open: string; close: string } | undefined;
  /** The prompt opened the thinking section (it ended with the open tag): the output starts inside it. */
  startInThinking?: boolean;
  /** Thinking is off: a thinking section the model writes anyway is dropped, never mixed into the content. */
  dropThinking?: boolean;
  /** Parse tool calls written this way. */
  tools?: ToolCallFormat | undefined;
  /** The prompt ended with the call marker (a call is required): the output starts inside a call. */
  startInCall?: boolean;
}

type Mode = "start" | "thinking" | "content" | "call";

/**
 * The call being read: its text after the marker, whether the array of calls is open, where the current object starts
 * in `text` (-1: between objects), its name once read, where its arguments start and how far they were streamed, and
 * whether only the closing marker is awaited.
 */
const newCall = (text: string, marker = "") => ({
  text,
  marker,
  arrayOpen: false,
  object: -1,
  name: undefined as string | undefined,
  args: -1,
  sent: -1,
  closing: false,
});

const isBlank = (s: string) => s.trim() === "";

/** The length of the longest suffix of `text` that begins one of `markers` (text that may still become one). */
function partialMarkerLength(text: string, markers: readonly string[]): number {
  let best = 0;
  for (const m of markers)
    for (let n = Math.min(m.length - 1, text.length); n > best; n--)
      if (text.endsWith(m.slice(0, n))) {
        best = n;
        break;
      }
  return best;
}

export class OutputParser {
  private readonly o: OutputParserOptions;
  private readonly markers: string[];
  private mode: Mode;
  private pending = "";
  /** Nothing but whitespace of the answer has gone out yet (after thinking, or after a call). */
  private answerStart = true;
  private afterCall = false;
  private calls = 0;
  /** The call being read: its text from the marker on, where its object starts, what has been streamed. */
  private call = newCall("");
  private readonly head: RegExp | undefined;

  constructor(o: OutputParserOptions) {
    this.o = o;
    const f = o.tools;
    this.markers = f ? [f.start, ...f.alsoStart].filter((m) => m !== "") : [];
    this.mode = o.startInCall ? "call" : o.startInThinking && o.thinking ? "thinking" : "start";
    if (f) {
      const key = (k: string) => JSON.stringify(k).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      this.head = new RegExp(
        `^\\{\\s*${key(f.nameKey)}\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)"\\s*,\\s*${key(f.argumentsKey)}\\s*:\\s*`,
      );
    }
  }

  /** Inside a call: what follows is constrained by the tools' grammar. */
  get inCall(): boolean {
    return this.mode === "call";
  }

  push(text: string): ParsedEvent[] {
    const out: ParsedEvent[] = [];
    if (this.mode === "call") this.call.text += text;
    else this.pending += text;
    this.run(out, false);
    return out;
  }

  /** The end of the output: what was held back goes out; a call left unfinished is reported as far as it got. */
  flush(): ParsedEvent[] {
    const out: ParsedEvent[] = [];
    this.run(out, true);
    if (this.mode === "call") this.endUnfinishedCall(out);
    else if (this.mode === "thinking") this.emitThinking(out, this.pending.trim());
    else if (!isBlank(this.pending) || (this.mode === "content" && !this.answerStart && !this.afterCall))
      this.emitContent(out, this.pending);
    this.pending = "";
    return out;
  }

  private run(out: ParsedEvent[], final: boolean): void {
    for (let progressed = true; progressed;) {
      const before = this.mode;
      if (this.mode === "start") this.start(final);
      else if (this.mode === "thinking") this.thinking(out);
      else if (this.mode === "content") this.content(out);
      else this.readCall(out);
      progressed = this.mode !== before;
    }
  }

  private start(final: boolean): void {
    const t = this.o.thinking;
    const text = this.pending.trimStart();
    if (!t || text.startsWith(t.open)) {
      if (t) this.pending = text.slice(t.open.length);
      this.mode = t ? "thinking" : "content";
      return;
    }
    if (!final && t.open.startsWith(text)) return;
    this.mode = "content";
  }

  private thinking(out: ParsedEvent[]): void {
    const close = this.o.thinking!.close;
    const at = this.pending.indexOf(close);
    if (at >= 0) {
      this.emitThinking(out, this.pending.slice(0, at).trim());
      this.pending = this.pending.slice(at + close.length);
      this.mode = "content";
      this.answerStart = true;
      return;
    }
    // Held back: what may begin the closing tag, and trailing whitespace (the section's own is trimmed).
    const body = this.pending.slice(0, this.pending.length - partialMarkerLength(this.pending, [close]));
    const ready = body.trimEnd();
    this.pending = this.pending.slice(ready.length);
    this.emitThinking(out, this.thinkingStarted ? ready : ready.trimStart());
  }

  private thinkingStarted = false;

  private emitThinking(out: ParsedEvent[], text: string): void {
    if (!text) return;
    this.thinkingStarted = true;
    if (!this.o.dropThinking) out.push({ kind: "thinking", text });
  }

  private content(out: ParsedEvent[]): void {
    if (this.answerStart || this.afterCall) {
      const trimmed = this.pending.trimStart();
      if (trimmed === "") return;
      const f = this.o.tools;
      if (f && f.start === "" && this.answerStart && trimmed.startsWith("{")) {
        this.beginCall(out, "", trimmed);
        return;
      }
      this.pending = trimmed;
    }
    let at = -1;
    let marker = "";
    for (const m of this.markers) {
      const i = this.pending.indexOf(m);
      if (i >= 0 && (at < 0 || i < at)) [at, marker] = [i, m];
    }
    if (at >= 0) {
      const before = this.pending.slice(0, at);
      if (!isBlank(before)) this.emitContent(out, before);
      this.beginCall(out, marker, this.pending.slice(at + marker.length));
      return;
    }
    const ready = this.pending.slice(0, this.pending.length - partialMarkerLength(this.pending, this.markers));
    if (isBlank(ready) && (this.answerStart || this.afterCall)) return;
    this.pending = this.pending.slice(ready.length);
    this.emitContent(out, ready);
  }

  private emitContent(out: ParsedEvent[], text: string): void {
    if (!text) return;
    this.answerStart = false;
    this.afterCall = false;
    out.push({ kind: "content", text });
  }

  private beginCall(out: ParsedEvent[], marker: string, after: string): void {
    out.push({ kind: "trigger", after });
    this.mode = "call";
    this.pending = "";
    this.call = newCall(after, marker);
  }

  /** Reads the call's text: the array's opening, each object (streamed as it comes), the closing marker. */
  private readCall(out: ParsedEvent[]): void {
    const f = this.o.tools!;
    const c = this.call;
    if (c.closing) return this.endCalls(c.text);
    for (;;) {
      if (c.object < 0) {
        const rest = c.text.trimStart();
        const skipped = c.text.length - rest.length;
        if (rest === "") return;
        if (f.array && !c.arrayOpen) {
          if (rest[0] !== "[") return this.abandonCall(out);
          c.arrayOpen = true;
          c.text = rest.slice(1);
          continue;
        }
        if (f.array && (rest[0] === "," || rest[0] === "]")) {
          if (rest[0] === "]") return this.endCalls(rest.slice(1));
          c.text = rest.slice(1);
          continue;
        }
        if (rest[0] !== "{") return this.abandonCall(out);
        c.text = c.text.slice(skipped);
        c.object = 0;
      }
      this.streamObject(out);
      const end = jsonValueEnd(c.text, c.object);
      if (end < 0) return;
      this.finishObject(out, c.text.slice(c.object, end));
      const rest = c.text.slice(end);
      c.object = -1;
      c.name = undefined;
      c.args = c.sent = -1;
      if (f.array) {
        c.text = rest;
        continue;
      }
      return this.endCalls(rest);
    }
  }

  /** The name and the arguments so far, once the object's head (`{"name": "…", "arguments": `) is complete. */
  private streamObject(out: ParsedEvent[]): void {
    const c = this.call;
    if (c.name === undefined) {
      const objectText = c.text.slice(c.object);
      const m = this.head?.exec(objectText);
      // Complete only once the arguments' first character is there (the whitespace before it may go on).
      if (!m || m[0].length >= objectText.length) return;
      try {
        c.name = JSON.parse(`"${m[1]}"`) as string;
      } catch {
        return;
      }
      c.args = c.sent = c.object + m[0].length;
      out.push({ kind: "call-begin", index: this.calls, name: c.name });
    }
    const opensValue = c.text[c.args] === "{" || c.text[c.args] === "[";
    if (!opensValue) return;
    const end = jsonValueEnd(c.text, c.args);
    const upTo = end < 0 ? c.text.length : end;
    if (upTo > c.sent) {
      out.push({ kind: "call-arguments", index: this.calls, text: c.text.slice(c.sent, upTo) });
      c.sent = upTo;
    }
  }

  private finishObject(out: ParsedEvent[], json: string): void {
    const f = this.o.tools!;
    const c = this.call;
    let obj: Record<string, unknown> | undefined;
    try {
      const v: unknown = JSON.parse(json);
      if (typeof v === "object" && v !== null && !Array.isArray(v)) obj = v as Record<string, unknown>;
    } catch {
      // reported as far as it got, below
    }
    const name = typeof obj?.[f.nameKey] === "string" ? (obj[f.nameKey] as string) : c.name;
    if (name === undefined) return this.abandonCall(out);
    let args = obj?.[f.argumentsKey];
    if (typeof args === "string") {
      try {
        args = JSON.parse(args);
      } catch {
        args = undefined;
      }
    }
    const argumentsObject =
      typeof args === "object" && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
    const streamed = c.name !== undefined && c.sent > c.args ? c.text.slice(c.args, c.sent) : undefined;
    const argumentsText = streamed ?? JSON.stringify(argumentsObject);
    if (c.name === undefined) {
      out.push({ kind: "call-begin", index: this.calls, name });
      out.push({ kind: "call-arguments", index: this.calls, text: argumentsText });
    }
    out.push({ kind: "call", index: this.calls, call: { name, arguments: argumentsObject }, argumentsText });
    this.calls++;
  }

  /** After the last object: the closing marker, then the answer goes on (another call may follow). */
  private endCalls(rest: string): void {
    const end = this.o.tools!.end;
    let text = rest;
    if (end !== "") {
      const t = rest.trimStart();
      if (t.startsWith(end)) text = t.slice(end.length);
      else if (end.startsWith(t)) {
        // The closing marker may still be on its way.
        this.call.text = rest;
        this.call.closing = true;
        return;
      }
    }
    this.call.closing = false;
    this.mode = "content";
    this.afterCall = true;
    this.answerStart = false;
    this.pending = text;
  }

  /** What began like a call but is not one (no grammar held it to the form): it was content after all. */
  private abandonCall(out: ParsedEvent[]): void {
    this.mode = "content";
    this.emitContent(out, this.call.marker + this.call.text);
    this.call = newCall("");
  }

  /** A call cut short (max tokens): reported once its name is known, dropped before (it is never content). */
  private endUnfinishedCall(out: ParsedEvent[]): void {
    const c = this.call;
    if (c.name === undefined) return;
    const argumentsText = c.text.slice(c.args, c.sent);
    out.push({ kind: "call", index: this.calls, call: { name: c.name, arguments: {} }, argumentsText, cut: true });
    this.calls++;
  }
}
