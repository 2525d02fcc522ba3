// An API served on chat completions (/v1/responses, /v1/messages) is checked by the chat completion's code too, whose
// errors name the chat request's fields (`messages.3.content.0.image_url`, `reasoning_effort`), not the ones the
// caller sent (`input.2.content.0.image_url`, `thinking`). The translation records which chat field came from which of
// the caller's, and such an error is told in the caller's words. Pure.
import { AppError, isAppError } from "../common/errors.ts";

export class FieldNames {
  private readonly names = new Map<string, string>();

  /** `chat` (a field or a prefix of fields, dotted) is `api` in the caller's request. */
  set(chat: string, api: string): this {
    this.names.set(chat, api);
    return this;
  }

  /** The caller's name of a chat field: its longest recorded prefix (whole segments) replaced; others unchanged. */
  of(field: string): string {
    for (let end = field.length; end > 0; end = field.lastIndexOf(".", end - 1)) {
      const api = this.names.get(field.slice(0, end));
      if (api !== undefined) return api + field.slice(end);
    }
    return field;
  }

  /** An error naming a chat field, renamed (its param and the field in its message); anything else unchanged. */
  rename(e: unknown): unknown {
    if (!isAppError(e) || e.param === null) return e;
    const param = this.of(e.param);
    if (param === e.param) return e;
    return new AppError(e.code, e.message.split(e.param).join(param), {
      param,
      headers: e.headers,
      ...(e.cause !== undefined ? { cause: e.cause } : {}),
    });
  }
}

/** Another API's request as the chat completion request it is served as (before its schema checks it). */
export interface ChatTranslation {
  chat: Record<string, unknown>;
  names: FieldNames;
}
