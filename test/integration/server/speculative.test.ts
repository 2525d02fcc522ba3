// Speculative decoding through the HTTP API: the draft_ngram option (request or Modelfile PARAMETER) turns
// prompt-lookup drafts on; the final /api object reports the tally, and /metrics counts drafted and accepted tokens.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { familyModelPath, tinyModelPath } from "../../support/models.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";

let srv: TestServer;
before(async () => {
  srv = await startTestServer();
  await createModel(srv.url, "babbler", await tinyModelPath({ controlLogit: -8 }));
  await createModel(srv.url, "drafting", await tinyModelPath({ controlLogit: -8 }), { parameters: { draft_ngram: 6 } });
  // A draft model: the babbler for itself (same vocabulary), and one whose vocabulary differs (Qwen3's extra tokens).
  await createModel(srv.url, "qwen3", await familyModelPath("qwen3"));
  await createModel(srv.url, "self-drafted", await tinyModelPath({ controlLogit: -8 }), {
    parameters: { draft_model: "babbler" },
  });
  await createModel(srv.url, "mismatched", await tinyModelPath({ controlLogit: -8, seed: 5 }), {
    parameters: { draft_model: "qwen3" },
  });
});
after(() => srv.stop());

interface Final {
  response: string;
  eval_count: number;
  draft_count?: number;
  draft_accepted_count?: number;
  draft_acceptance_rate?: number;
  error?: string;
}

const generate = async (model: string, options: Record<string, unknown> = {}) => {
  const r = await fetch(`${srv.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({
      model,
      prompt: "the cat and the dog and the cat and the dog and the cat and the",
      raw: true,
      stream: false,
      options: { temperature: 0, num_predict: 24, ...options },
    }),
  });
  return { status: r.status, body: (await r.json()) as Final };
};

const counter = (metrics: string, name: string, model: string): number =>
  Number(new RegExp(`^${name}\\{model="${model}:latest"\\} (\\S+)$`, "m").exec(metrics)?.[1] ?? 0);

test("draft_ngram: the final object's tally, the same as /metrics counts; off by default", async () => {
  const plain = await generate("babbler");
  assert.equal(plain.status, 200);
  assert.equal(plain.body.draft_count, undefined, "no tally without drafting");
  const a = await generate("babbler", { draft_ngram: 6 });
  const b = await generate("drafting");
  for (const r of [a, b]) {
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.eval_count, 24);
    const { draft_count: drafted, draft_accepted_count: accepted, draft_acceptance_rate: rate } = r.body;
    assert.ok(drafted !== undefined && accepted !== undefined && rate !== undefined, JSON.stringify(r.body));
    assert.ok(drafted > 0 && accepted <= drafted, JSON.stringify(r.body));
    assert.equal(rate, drafted > 0 ? accepted / drafted : 0);
  }
  // Greedy: the same text with drafts as without.
  assert.equal(a.body.response, plain.body.response);
  assert.equal(b.body.response, plain.body.response);
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  assert.equal(counter(metrics, "gantry_draft_tokens_total", "babbler"), a.body.draft_count);
  assert.equal(counter(metrics, "gantry_draft_tokens_total", "drafting"), b.body.draft_count);
  assert.equal(counter(metrics, "gantry_draft_accepted_tokens_total", "drafting"), b.body.draft_accepted_count);
});

test("/v1 usage: drafted tokens as OpenAI's accepted and rejected prediction tokens, and draft_acceptance_rate", async () => {
  const openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused" });
  const complete = (model: string) =>
    openai.completions.create({
      model,
      prompt: "the cat and the dog and the cat and the dog and the cat and the",
      max_tokens: 24,
      temperature: 0,
    });
  const plain = (await complete("babbler")).usage as unknown as Record<string, unknown>;
  assert.equal(plain.draft_acceptance_rate, undefined, "no drafting: no extra");
  assert.equal(plain.completion_tokens_details, undefined);
  const usage = (await complete("drafting")).usage as OpenAI.CompletionUsage & { draft_acceptance_rate?: number };
  const details = usage.completion_tokens_details!;
  const drafted = details.accepted_prediction_tokens! + details.rejected_prediction_tokens!;
  assert.ok(drafted > 0, JSON.stringify(usage));
  assert.equal(usage.draft_acceptance_rate, details.accepted_prediction_tokens! / drafted);
});

test("bad input: draft_ngram or draft_min out of range is a 400 naming it", async () => {
  for (const option of ["draft_ngram", "draft_min"]) {
    const r = await generate("babbler", { [option]: 65 });
    assert.equal(r.status, 400);
    assert.match(r.body.error!, new RegExp(option));
  }
});

test("PARAMETER draft_model: drafts from the draft model, the same greedy text; a vocabulary that differs is refused at load", async () => {
  const plain = await generate("babbler");
  // A draft model as big as the target never pays, so the pacer drafts nothing; draft_min makes it draft anyway.
  const paced = await generate("self-drafted");
  assert.equal(paced.status, 200, JSON.stringify(paced.body));
  assert.equal(paced.body.draft_count, 0);
  const drafted = await generate("self-drafted", { draft_min: 3 });
  assert.equal(drafted.status, 200, JSON.stringify(drafted.body));
  assert.equal(drafted.body.response, plain.body.response);
  assert.equal(paced.body.response, plain.body.response);
  assert.ok(drafted.body.draft_count! > 0 && drafted.body.draft_accepted_count! > 0, JSON.stringify(drafted.body));
  const refused = await generate("mismatched");
  assert.equal(refused.status, 400);
  assert.match(refused.body.error!, /draft model "qwen3:latest" does not share the vocabulary of "mismatched:latest"/);
});
