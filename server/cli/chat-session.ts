// The state of an interactive chat: history, system message and parameters set with /set. Pure.
import type { ChatMessage, ChatRequest } from "../api/client.ts";
import type { ThinkSetting } from "../chat/types.ts";
import { parseParameterValue, REPEATABLE_PARAMETERS } from "../common/modelfile/parameters.ts";

export type OptionValue = number | boolean | string | string[];

export class ChatSession {
  readonly model: string;
  system: string | undefined;
  /** /set think or /set nothink (undefined: the model's default). */
  think: ThinkSetting | undefined;
  readonly options: Record<string, OptionValue> = {};
  private history: ChatMessage[] = [];
  private readonly keepAlive: string | undefined;

  constructor(model: string, opts: { keepAlive?: string | undefined } = {}) {
    this.model = model;
    this.keepAlive = opts.keepAlive;
  }

  get messages(): readonly ChatMessage[] {
    return this.history;
  }

  /** The /api/chat body for a new user turn: system message, the whole history, then the turn. */
  request(user: ChatMessage): ChatRequest {
    const system: ChatMessage[] = this.system !== undefined ? [{ role: "system", content: this.system }] : [];
    return {
      model: this.model,
      messages: [...system, ...this.history, user],
      ...(Object.keys(this.options).length > 0 ? { options: { ...this.options } } : {}),
      ...(this.keepAlive !== undefined ? { keep_alive: this.keepAlive } : {}),
      ...(this.think !== undefined ? { think: this.think } : {}),
    };
  }

  /** Records a finished exchange (cancelled or failed turns are not recorded). */
  commit(user: ChatMessage, answer: string): void {
    this.history.push(user, { role: "assistant", content: answer });
  }

  clear(): void {
    this.history = [];
  }

  /** Validates and sets an option; returns the error text for a bad name or value. */
  setParameter(name: string, values: readonly string[]): string | null {
    if (REPEATABLE_PARAMETERS.has(name)) {
      for (const v of values) {
        const r = parseParameterValue(name, v);
        if (!r.ok) return r.message;
      }
      this.options[name] = [...values];
      return null;
    }
    if (values.length !== 1) return `${name} takes one value`;
    const r = parseParameterValue(name, values[0]!);
    if (!r.ok) return r.message;
    this.options[name] = r.value;
    return null;
  }

  /** "name value" lines of the parameters set in this session (the /show parameters "user defined" part). */
  describeOptions(): string {
    return Object.entries(this.options)
      .flatMap(([k, v]) =>
        Array.isArray(v) ? v.map((x) => `${k.padEnd(30)} ${JSON.stringify(x)}`) : [`${k.padEnd(30)} ${String(v)}`],
      )
      .join("\n");
  }
}
