// How many tokens a stream drafts each step (speculative decoding, speculation.ts), from the acceptance it has seen: a
// draft pays only when the tokens it saves outweigh the cost of verifying it, so the size follows the estimated chance
// that a drafted token is accepted, and drafting pauses (with rare, small probes) where it does not pay. Pure.

/**
 * A decode step of one token and `k` drafted ones costs about VERIFY_BASE + VERIFY_PER_TOKEN × k single-token steps
 * (k ≥ 1): llama-bench on 2 CPU cores, SmolLM2-135M Q4_1 at depth 128 (docs/decisions/0016): 1.63 (k = 1),
 * 2.05 (2), 2.98 (4), 4.30 (8), 7.60 (16). A GPU verifies more cheaply: these costs make the pacer cautious there.
 */
export const VERIFY_BASE = 1.25;
export const VERIFY_PER_TOKEN = 0.4;

/** Steps without a draft before a probe, at first and at most (doubling after each probe that does not pay). */
export const PROBE_AFTER_MIN = 8;
export const PROBE_AFTER_MAX = 128;
/** Tokens a probe drafts: a small verify (about one extra step), enough to see acceptance come back. */
export const PROBE_SIZE = 2;
/** Weight of past drafts in the acceptance estimate, per verified draft (recent drafts count most). */
export const DECAY = 0.9;
/** Prior accepted and rejected counts: a start at p = 0.75, which drafts 2 tokens. */
const PRIOR = { accepted: 1.5, rejected: 0.5 };

export interface PacerCosts {
  /** Cost of one drafted token's drafting, in target decode steps (0 for prompt lookup; a draft model's size ratio). */
  draftPerToken: number;
}

export interface PacerOptions extends PacerCosts {
  /** Tokens drafted a step at most. */
  max: number;
  /** Tokens drafted a step at least, paying or not (option draft_min; 0 = as many as pay). */
  min: number;
}

/**
 * Expected tokens a step yields with `k` drafted tokens, each accepted with probability `p` while the ones before it
 * were: the accepted prefix plus the token sampled after it, 1 + p + … + p^k.
 */
export function expectedTokens(p: number, k: number): number {
  let sum = 1,
    term = 1;
  for (let i = 0; i < k; i++) sum += term *= p;
  return sum;
}

/** A step's cost with `k` drafted tokens, in single-token steps. */
export const stepCost = (k: number, costs: PacerCosts): number =>
  k === 0 ? 1 : VERIFY_BASE + VERIFY_PER_TOKEN * k + costs.draftPerToken * k;

/** The draft size (0..max) with the most tokens per unit of cost at acceptance `p`; 0 when no draft beats none. */
export function bestDraftSize(p: number, max: number, costs: PacerCosts): number {
  let best = 0,
    bestRate = 1;
  for (let k = 1; k <= max; k++) {
    const rate = expectedTokens(p, k) / stepCost(k, costs);
    if (rate > bestRate) [best, bestRate] = [k, rate];
  }
  return best;
}

export class DraftPacer {
  private readonly max: number;
  private readonly min: number;
  private readonly costs: PacerCosts;
  /** Whether drafts can pay at all: not when even a draft always accepted costs more than it saves. */
  private readonly canPay: boolean;
  /** Decayed counts of drafted tokens accepted, and of drafts cut short by a rejected token. */
  private accepted = PRIOR.accepted;
  private rejected = PRIOR.rejected;
  /** Steps without a draft since the last one, and how many make a probe due. */
  private idle = 0;
  private probeAfter = PROBE_AFTER_MIN;
  private probing = false;

  constructor(o: PacerOptions) {
    this.max = o.max;
    this.min = Math.min(o.min, o.max);
    this.costs = { draftPerToken: o.draftPerToken };
    this.canPay = bestDraftSize(1, o.max, this.costs) > 0;
  }

  /** The estimated chance that a drafted token is accepted (after the ones before it were). */
  get acceptance(): number {
    return this.accepted / (this.accepted + this.rejected);
  }

  /** Tokens to draft for the next step (0: decode the token alone). */
  size(): number {
    const k = Math.max(bestDraftSize(this.acceptance, this.max, this.costs), this.min);
    if (k > 0) return k;
    if (!this.canPay || this.idle < this.probeAfter) return 0;
    this.probing = true;
    return Math.min(PROBE_SIZE, this.max);
  }

  /** A step went without a draft (size() said 0, or the drafter had none). */
  skipped(): void {
    this.idle++;
  }

  /** A draft of `drafted` tokens was verified and `accepted` of them kept. */
  verified(drafted: number, accepted: number): void {
    if (drafted <= 0) return;
    this.accepted = DECAY * this.accepted + accepted;
    this.rejected = DECAY * this.rejected + (accepted < drafted ? 1 : 0);
    this.idle = 0;
    // A probe cut short makes the next one wait twice as long; one accepted whole (drafts may pay again) does not.
    if (this.probing && accepted < drafted) this.probeAfter = Math.min(this.probeAfter * 2, PROBE_AFTER_MAX);
    else this.probeAfter = PROBE_AFTER_MIN;
    this.probing = false;
  }
}
