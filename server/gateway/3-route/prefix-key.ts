// The key PrefixHash routes a request by: its model, the start of its system text (system messages, Anthropic's system,
// Responses' instructions) and the start of its first user message (a completion's prompt), each cut at
// prefixCharLength characters, so every turn of a conversation has the same key and a long system prompt shared by an
// app's conversations does not give them all one key. Read from the buffered body without parsing all of it: strings
// are decoded by JSON.parse itself, slice by slice (docs/decisions/0008). A body it cannot read gives no key (the
// request is routed by load). Pure.

/** The route families whose bodies carry a conversation's start, and where. */
const FIELDS: Record<string, { lead?: string; list?: string; text?: string }> = {
  "/v1/chat/completions": { list: "messages" },
  "/api/chat": { list: "messages" },
  "/v1/messages": { lead: "system", list: "messages" },
  "/v1/responses": { lead: "instructions", list: "input" },
  "/v1/completions": { text: "prompt" },
  "/api/generate": { lead: "system", text: "prompt" },
};

const QUOTE = 0x22,
  BACKSLASH = 0x5c;
const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** A string slice without the escape its cut left unfinished at the end (`\`, `\u00`), so JSON.parse can read it. */
function withoutCutEscape(s: string): string {
  const m = /(\\+)(u[0-9a-fA-F]{0,3})?$/.exec(s);
  return m && m[1]!.length % 2 === 1 ? s.slice(0, s.length - 1 - (m[2]?.length ?? 0)) : s;
}

/** Reads JSON tokens of a buffer from a position; every method returns false/undefined on anything unexpected. */
class Reader {
  private readonly b: Buffer;
  i = 0;
  constructor(b: Buffer) {
    this.b = b;
  }

  peek(): number | undefined {
    while (isSpace(this.b[this.i])) this.i++;
    return this.b[this.i];
  }

  eat(c: number): boolean {
    if (this.peek() !== c) return false;
    this.i++;
    return true;
  }

  /** The index of the quote closing the string that opens at `start` (a quote), or -1. */
  private stringEnd(start: number): number {
    let at = start + 1;
    for (;;) {
      const q = this.b.indexOf(QUOTE, at);
      if (q < 0) return -1;
      let slashes = 0;
      while (this.b[q - 1 - slashes] === BACKSLASH) slashes++;
      if (slashes % 2 === 0) return q;
      at = q + 1;
    }
  }

  /** A string's first `max` characters (decoded), the reader past the whole string; undefined if not a string. */
  string(max: number): string | undefined {
    if (this.peek() !== QUOTE) return undefined;
    const start = this.i;
    const end = this.stringEnd(start);
    if (end < 0) return undefined;
    this.i = end + 1;
    // At most 6 bytes per character (\uXXXX): the first max * 6 bytes hold the first max characters.
    const slice = this.b.toString("utf8", start + 1, Math.min(end, start + 1 + max * 6));
    try {
      return (JSON.parse(`"${withoutCutEscape(slice)}"`) as string).slice(0, max);
    } catch {
      return undefined;
    }
  }

  /** Skips one value of any kind; false if the body is not JSON there. */
  skip(): boolean {
    const c = this.peek();
    if (c === QUOTE) {
      const end = this.stringEnd(this.i);
      if (end < 0) return false;
      this.i = end + 1;
      return true;
    }
    if (c === 0x7b || c === 0x5b) {
      const close = c === 0x7b ? 0x7d : 0x5d;
      this.i++;
      if (this.eat(close)) return true;
      for (;;) {
        if (c === 0x7b && (!this.skip() || !this.eat(0x3a))) return false; // key :
        if (!this.skip()) return false;
        if (this.eat(close)) return true;
        if (!this.eat(0x2c)) return false;
      }
    }
    // A number, true, false or null: up to the next delimiter.
    const from = this.i;
    while (this.i < this.b.length && !isSpace(this.b[this.i]) && ![0x2c, 0x7d, 0x5d].includes(this.b[this.i]!))
      this.i++;
    return this.i > from;
  }

  /** Calls `field` for each key of the object here (the reader at its value); `field` reads or skips the value. */
  object(field: (key: string) => boolean | "stop"): boolean {
    if (!this.eat(0x7b)) return false;
    if (this.eat(0x7d)) return true;
    for (;;) {
      const key = this.string(64);
      if (key === undefined || !this.eat(0x3a)) return false;
      const r = field(key);
      if (r === "stop") return true;
      if (!r) return false;
      if (this.eat(0x7d)) return true;
      if (!this.eat(0x2c)) return false;
    }
  }

  /** Calls `item` for each element of the array here; stops early when it says so. */
  array(item: () => boolean | "stop"): boolean {
    if (!this.eat(0x5b)) return false;
    if (this.eat(0x5d)) return true;
    for (;;) {
      const r = item();
      if (r === "stop") return true;
      if (!r) return false;
      if (this.eat(0x5d)) return true;
      if (!this.eat(0x2c)) return false;
    }
  }
}

/** Collects text until `max` characters. */
class Budget {
  text = "";
  private readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
  get full(): boolean {
    return this.text.length >= this.max;
  }
  add(s: string): void {
    this.text = (this.text + s).slice(0, this.max);
  }
  get left(): number {
    return this.max - this.text.length;
  }
}

/** A message's or a part list's text: a string, or the `text` of its parts (images and the rest leave no text). */
function readContent(r: Reader, out: Budget): boolean {
  const c = r.peek();
  if (c === QUOTE) {
    const s = r.string(out.left);
    if (s === undefined) return false;
    out.add(s);
    return true;
  }
  if (c !== 0x5b) return r.skip();
  return r.array(() => {
    if (r.peek() === QUOTE) return readContent(r, out);
    if (r.peek() !== 0x7b) return r.skip();
    return r.object((k) => (k === "text" && !out.full ? readContent(r, out) : r.skip()));
  });
}

/**
 * Messages (or Responses input items) up to and including the first user one: those before it (system, developer)
 * into `lead`, the first user message into `main`.
 */
function readMessages(r: Reader, lead: Budget, main: Budget): boolean {
  return r.array(() => {
    if (main.text) return "stop";
    if (r.peek() === QUOTE) return readContent(r, main);
    let role = "";
    const part = new Budget(Math.max(lead.left, main.left));
    const ok = r.object((k) => {
      if (k === "role") {
        const s = r.string(16);
        if (s === undefined) return false;
        role = s;
        return true;
      }
      return k === "content" ? readContent(r, part) : r.skip();
    });
    if (!ok) return false;
    if (role === "user") main.add(part.text || " ");
    else lead.add(`${role}:${part.text}\n`);
    return true;
  });
}

/**
 * The PrefixHash key of a request to `path` (an app's path after /<org>/<app>), or undefined when the route carries
 * no conversation or the body cannot be read. At most `chars` characters of the conversation's start are used.
 */
export function prefixKey(path: string, body: Buffer | null, chars: number): string | undefined {
  const fields = FIELDS[path];
  if (!fields || !body || body.length === 0) return undefined;
  const r = new Reader(body);
  let model = "";
  const lead = new Budget(chars),
    main = new Budget(chars);
  const ok = r.object((k) => {
    if (k === "model") {
      const s = r.string(256);
      if (s === undefined) return false;
      model = s;
      return true;
    }
    if (k === fields.lead) return readContent(r, lead);
    // The conversation's start is read: the rest of the body is not (the reader may stand inside the list).
    if (k === fields.list) return (r.peek() === QUOTE ? readContent(r, main) : readMessages(r, lead, main)) && "stop";
    if (k === fields.text) return readContent(r, main) && "stop";
    return r.skip();
  });
  if (!ok) return undefined;
  // A model named after the conversation (the main pass stopped inside it): its key is the body's last "model" (a
  // quote inside a string is escaped, so this is a key; nested objects before it would only mislead the routing).
  if (!model) {
    const again = new Reader(body);
    again.i = body.lastIndexOf('"model"');
    if (again.i >= 0 && again.string(8) === "model" && again.eat(0x3a)) model = again.string(256) ?? "";
  }
  return lead.text || main.text ? `${model}\n${lead.text}\n${main.text}` : undefined;
}
