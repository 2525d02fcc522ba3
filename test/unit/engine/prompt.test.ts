import { test } from "node:test";
import assert from "node:assert/strict";
import { goTemplateData as templateData } from "../../../server/chat/go-data.ts";
import { withDefaultSystem } from "../../../server/engine/prompt.ts";
import type { ChatMessage } from "../../../server/engine/types.ts";

test("the model's SYSTEM is used only when the conversation has none", () => {
  const user: ChatMessage = { role: "user", content: "hi" };
  assert.deepEqual(withDefaultSystem([user], "be brief"), [{ role: "system", content: "be brief" }, user]);
  const own: ChatMessage[] = [{ role: "system", content: "mine" }, user];
  assert.deepEqual(withDefaultSystem(own, "be brief"), own);
  assert.deepEqual(withDefaultSystem([user], undefined), [user]);
});

test("template data follows Ollama: .System, .Prompt = last user message, .Messages = history", () => {
  const d = templateData([
    { role: "system", content: "S" },
    { role: "user", content: "one" },
    { role: "assistant", content: "two" },
    { role: "user", content: "three" },
  ]);
  assert.equal(d.System, "S");
  assert.equal(d.Prompt, "three");
  assert.equal(d.Response, "");
  assert.deepEqual(
    d.Messages.map((m) => m.Role),
    ["system", "user", "assistant", "user"],
  );
  assert.equal(d.Messages[3]!.Content, "three");
});

test("a template without a system role gets the system text in front of the first user message", async () => {
  const { systemIntoFirstUser } = await import("../../../server/engine/prompt.ts");
  assert.deepEqual(
    systemIntoFirstUser([
      { role: "system", content: "S" },
      { role: "user", content: "one" },
      { role: "user", content: "two" },
    ]),
    [
      { role: "user", content: "S\n\none" },
      { role: "user", content: "two" },
    ],
  );
  assert.equal(systemIntoFirstUser([{ role: "user", content: "hi" }]), undefined);
});
