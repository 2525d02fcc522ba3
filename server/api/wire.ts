// How every request object of the HTTP APIs is built (the Ollama-native and OpenAI-compatible schemas, the store's).
// One rule for all of them: a JSON `null` on a field is the same as leaving the field out. Ollama's Go decoder treats a
// null as a missing field and its options parser skips nulls; OpenAI accepts null for every optional field; clients
// rely on both (langchain's OllamaEmbeddings sends `options: {"temperature": null, …}` on every call, the openai
// Python client sends `tools: null`). The rule is shallow: each wire object drops its own null-valued keys before its
// fields are checked, and nested wire objects (options, messages, response_format, …) do the same, so no request value
// is ever walked recursively. A required field sent as null is reported as missing.
import { z } from "zod";
import { schemaProblem } from "../common/json-schema-check.ts";

/** A copy of a plain object without its null-valued keys; anything else as it is (the schema says what is wrong). */
export function dropNulls(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const entries = Object.entries(value);
  if (!entries.some(([, v]) => v === null)) return value;
  return Object.fromEntries(entries.filter(([, v]) => v !== null));
}

/**
 * Ollama's deprecated `name` where `model` is missing or empty (its handlers read `cmp.Or(req.Model, req.Name)`): older
 * clients send only `name`, and the Go client's `ShowRequest{Name: …}` sends `"model": ""` beside it.
 */
export function modelOrName(body: unknown): unknown {
  if (!body || typeof body !== "object" || Array.isArray(body)) return body;
  const { model, name } = body as { model?: unknown; name?: unknown };
  const empty = model === undefined || model === null || model === "";
  return empty && typeof name === "string" && name !== "" ? { ...body, model: name } : body;
}

/**
 * A request object (or a union of them): `null` on any of its fields means the field is absent. Typed as the schema it
 * wraps (what clients send, what routes get).
 */
export const wire = <T extends z.ZodType>(schema: T): z.ZodType<z.output<T>, z.input<T>> =>
  z.preprocess(dropNulls, schema) as unknown as z.ZodType<z.output<T>, z.input<T>>;

/**
 * A JSON schema object sent to constrain the output: it must be one the grammar compiler honours as written
 * (json-schema-check.ts: nesting depth first, then unknown types, `$ref`s that point nowhere, invalid `pattern`s, empty
 * `enum`s), checked when the request is parsed, before anything else walks it.
 */
export const JsonSchemaObject = z.record(z.string(), z.unknown()).superRefine((schema, ctx) => {
  const problem = schemaProblem(schema);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/**
 * A sampling seed: any integer, as Ollama's int64 (the Go client's tests send `rand.Int()`, above 2^53, where JSON
 * numbers lose precision but stay integers); sampling uses its low 32 bits (engine/sampling.ts).
 */
export const SeedSchema = z.number().refine(Number.isInteger, "must be an integer");

/** A string where Ollama's Go structs have no `omitempty`: the Go client sends "" for unset, which means absent. */
export const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === "" ? undefined : v));
