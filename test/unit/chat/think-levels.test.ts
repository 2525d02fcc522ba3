// Think levels as templates read them: Jinja's enable_thinking and reasoning_effort, Go's .Think and .ThinkLevel.
import { test } from "node:test";
import assert from "node:assert/strict";
import { renderChat } from "../../../server/chat/render.ts";
import type { ThinkSetting } from "../../../server/chat/types.ts";

const messages = [{ role: "user", content: "hi" }];
const jinja = (text: string, think: ThinkSetting | undefined) =>
  renderChat(
    { kind: "jinja", text },
    { messages, addGenerationPrompt: true, ...(think !== undefined ? { think } : {}) },
  );
const go = (think: ThinkSetting | undefined) =>
  renderChat(
    { kind: "go", text: "{{ if .IsThinkSet }}{{ .Think }} {{ .ThinkLevel }}{{ else }}unset{{ end }}" },
    { messages, addGenerationPrompt: true, ...(think !== undefined ? { think } : {}) },
  );

const EFFORT = "{{ enable_thinking }} {{ reasoning_effort | default('none') }}";
const WITH_MAX = "{% if reasoning_effort == 'max' %}MAX{% else %}{{ reasoning_effort }}{% endif %}";

test("Jinja templates get enable_thinking and the level as reasoning_effort", () => {
  assert.equal(jinja(EFFORT, true), "true none");
  assert.equal(jinja(EFFORT, false), "false none");
  assert.equal(jinja(EFFORT, "low"), "true low");
  assert.equal(jinja(EFFORT, "high"), "true high");
});

test('"max" goes to a template that names it; to one that does not, as its highest level, "high"', () => {
  assert.equal(jinja(WITH_MAX, "max"), "MAX");
  assert.equal(jinja(EFFORT, "max"), "true high");
});

test("Go templates get .Think, .ThinkLevel and .IsThinkSet as Ollama's", () => {
  assert.equal(go(undefined), "unset");
  assert.equal(go(false), "false ");
  assert.equal(go(true), "true ");
  assert.equal(go("medium"), "true medium");
  assert.equal(go("max"), "true max");
});
