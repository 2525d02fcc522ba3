// Incremental detokenization. A multi-byte UTF-8 character can be split across byte-level tokens; detokenizing such a
// token alone yields U+FFFD. Tokens are held until their text is complete, so clients never see replacement fragments.

export type Detokenize = (tokens: readonly number[], lastTokens: readonly number[]) => string;

const REPLACEMENT = "\uFFFD";
/** A UTF-8 character has at most 4 bytes: after that many pending tokens the replacement char is real output. */
const MAX_PENDING = 4;
/** Preceding tokens passed as context so the detokenizer handles leading spaces like a continuation. */
const CONTEXT_TOKENS = 8;

export class TokenTextStream {
  private readonly detokenize: Detokenize;
  private pending: number[] = [];
  private previous: number[] = [];

  constructor(detokenize: Detokenize) {
    this.detokenize = detokenize;
  }

  /** Text completed by this token ("" while a character is still incomplete). */
  push(token: number): string {
    this.pending.push(token);
    const text = this.detokenize(this.pending, this.previous);
    if (text.endsWith(REPLACEMENT) && this.pending.length < MAX_PENDING) return "";
    this.previous = [...this.previous, ...this.pending].slice(-CONTEXT_TOKENS);
    this.pending = [];
    return text;
  }

  /** At the end: the complete part of whatever is pending; a truncated trailing character is dropped. */
  flush(): string {
    if (this.pending.length === 0) return "";
    const text = this.detokenize(this.pending, this.previous);
    this.pending = [];
    return text.replace(/\uFFFD+$/u, "");
  }
}
