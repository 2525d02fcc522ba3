import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bestDraftSize,
  DraftPacer,
  expectedTokens,
  PROBE_AFTER_MAX,
  PROBE_AFTER_MIN,
  PROBE_SIZE,
  stepCost,
} from "../../../server/engine/draft-pacer.ts";

const lookup = { draftPerToken: 0 };

test("a step's expected tokens and cost: the accepted prefix and one more, for 1.25 + 0.4 steps per drafted token", () => {
  assert.equal(expectedTokens(1, 8), 9);
  assert.equal(expectedTokens(0, 8), 1);
  assert.ok(Math.abs(expectedTokens(0.5, 2) - 1.75) < 1e-12);
  assert.equal(stepCost(0, lookup), 1);
  assert.ok(Math.abs(stepCost(8, lookup) - 4.45) < 1e-12);
  assert.ok(Math.abs(stepCost(2, { draftPerToken: 1 }) - 4.05) < 1e-12);
});

test("the best draft size grows with acceptance, is 0 where no draft pays, and 0 for a draft model as big as the target", () => {
  assert.equal(bestDraftSize(1, 8, lookup), 8);
  assert.equal(bestDraftSize(0.2, 8, lookup), 0);
  assert.equal(bestDraftSize(0.5, 8, lookup), 0);
  const mid = bestDraftSize(0.9, 8, lookup);
  assert.ok(mid > 1 && mid < 8, String(mid));
  assert.ok(bestDraftSize(0.8, 8, lookup) <= mid);
  assert.equal(bestDraftSize(1, 6, { draftPerToken: 1 }), 0);
  assert.ok(bestDraftSize(1, 6, { draftPerToken: 0.05 }) > 0);
});

test("drafts accepted whole grow to the most; drafts rejected stop drafting, then small probes come ever more rarely", () => {
  const pacer = new DraftPacer({ max: 8, min: 0, draftPerToken: 0 });
  const first = pacer.size();
  assert.ok(first > 0 && first < 8, String(first));
  for (let i = 0; i < 20; i++) pacer.verified(pacer.size(), pacer.size());
  assert.equal(pacer.size(), 8);
  let steps = 0;
  while (pacer.size() > 0) {
    pacer.verified(pacer.size(), 0);
    assert.ok(++steps < 20, "drafting stops");
  }
  // Paused: a probe of PROBE_SIZE after PROBE_AFTER_MIN steps without a draft; a rejected probe doubles the wait.
  const waits: number[] = [];
  for (let probe = 0; probe < 6; probe++) {
    let idle = 0;
    while (pacer.size() === 0) {
      pacer.skipped();
      idle++;
    }
    waits.push(idle);
    assert.equal(pacer.size(), PROBE_SIZE);
    pacer.verified(PROBE_SIZE, 0);
  }
  assert.equal(waits[0], PROBE_AFTER_MIN);
  assert.deepEqual(waits.slice(1, 3), [PROBE_AFTER_MIN * 2, PROBE_AFTER_MIN * 4]);
  assert.equal(Math.max(...waits), PROBE_AFTER_MAX);
  // Probes accepted whole come back soon, and drafting resumes.
  let probes = 0;
  while (pacer.size() <= PROBE_SIZE && probes < 30) {
    while (pacer.size() === 0) pacer.skipped();
    pacer.verified(pacer.size(), pacer.size());
    probes++;
  }
  assert.ok(pacer.size() > PROBE_SIZE, `drafting resumed after ${probes} probes`);
});

test("a drafter that cannot pay never drafts, unless draft_min asks for drafts", () => {
  const never = new DraftPacer({ max: 6, min: 0, draftPerToken: 1 });
  for (let i = 0; i < 1000; i++) {
    assert.equal(never.size(), 0);
    never.skipped();
  }
  const forced = new DraftPacer({ max: 6, min: 4, draftPerToken: 1 });
  assert.equal(forced.size(), 4);
  forced.verified(4, 0);
  assert.equal(forced.size(), 4);
  assert.equal(new DraftPacer({ max: 3, min: 8, draftPerToken: 0 }).size(), 3, "at most max");
});
