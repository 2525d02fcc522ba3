// Request validation messages name the field and say whether it is missing or has the wrong type.
import { test } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { parseBody } from "../../../server/common/validate.ts";

const schema = z.object({ model: z.string(), options: z.object({ repeat_penalty: z.number().optional() }).optional() });

const messageOf = (body: unknown): string => {
  try {
    parseBody(schema, body);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("parseBody accepted the body");
};

test("a missing field is reported as required, a wrong type as invalid with what was expected", () => {
  assert.equal(messageOf({}), "model is required");
  assert.equal(
    messageOf({ model: "m", options: { repeat_penalty: "hot" } }),
    "invalid options.repeat_penalty: Invalid input: expected number, received string",
  );
  assert.equal(messageOf({ model: 5 }), "invalid model: Invalid input: expected string, received number");
  assert.equal(messageOf([]), "request body must be a JSON object");
});
