import type { TaskFamily } from '../../env/family.ts';
import { slippingExpert } from '../../env/slip.ts';
import type { ChatLayout } from '../../rollout/chat-layout.ts';
import type { RolloutConfig } from '../../rollout/config.ts';
import type { EpisodeRecord, TurnRecord } from '../../rollout/record.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import {
  describeFault,
  FaultBudgetError,
  overFaultBudget,
  runWithRetries,
  splitFaults,
  type FaultPolicy,
} from '../../rollout/faults.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import type { LoadedTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import type { Rng } from '../../util/random.ts';

/** One SFT training sequence: token ids and the cross-entropy mask (1 on generated tokens). */
export interface SftSequence {
  tokens: Int32Array; // [T]
  mask: Uint8Array; // [T]
  /** Per position: what kind of generated token this is (for held-out accuracy by kind). */
  kinds?: TokenKind[];
}

/**
 * Generated-token kinds: 'action' (action words and their <eot>), 'answer' (values after `answer`;
 * in the tools format the call of the `answer` tool), 'summary' (in the tools format the text after
 * its thinking block), 'reasoning' (a thinking block, tools format).
 */
export type TokenKind = 'none' | 'action' | 'answer' | 'summary' | 'reasoning';

/** Expert episodes split as training splits a batch (docs/faults.md): only `episodes` are trained on. */
export interface ExpertEpisodes {
  /** Episodes that ended as the demonstrator's (success, failure, ...), in draw order. */
  episodes: EpisodeRecord[];
  /** Episodes still faulted after their retries: no tokens of theirs are trained on. */
  leftOut: EpisodeRecord[];
  /** Faulted attempts that were run again on a fresh environment. */
  retried: EpisodeRecord[];
}

/**
 * Expert episodes with compaction, summaries by lossy(p) (docs/tasks.md), final decisions slipping
 * with probability slipP. Seeds are drawn from the given range with the rng: a fresh draw per
 * epoch streams new tasks (the generator is infinite), which is what stops a small model from
 * memorising a fixed set of episodes. An episode that ends in a fault (a sandbox that did not
 * start, say) runs again on a fresh environment, the same task and seed, up to `retries` times;
 * one still faulted is left out: a fault's partial history is not a demonstration.
 */
export async function expertEpisodes(options: {
  family: TaskFamily;
  knobs: Record<string, unknown>;
  /** Shares of episodes with extra knobs on top of `knobs`; the rest use `knobs` alone. */
  mix?: readonly { share: number; knobs: Record<string, unknown> }[];
  rollout: RolloutConfig;
  layout: ChatLayout;
  tokenizer: LoadedTokenizer;
  lossyP: number;
  /** Goal-clause drop probability of the lossy writer; undefined: lossyP / 2. */
  lossyGoalP?: number;
  /** Probability that the demonstrator's final decision slips (src/env/slip.ts); 0: the expert. */
  slipP?: number;
  episodes: number;
  seeds: { start: number; end: number };
  rng: Rng;
  idPrefix: string;
  /** Times a faulted episode runs again (default 1). */
  retries?: number;
}): Promise<ExpertEpisodes> {
  const { family, tokenizer, rng } = options;
  const span = options.seeds.end - options.seeds.start;
  const knobsFor = (): Record<string, unknown> => {
    let u = rng.next();
    for (const m of options.mix ?? []) {
      if (u < m.share) return { ...options.knobs, ...m.knobs };
      u -= m.share;
    }
    return options.knobs;
  };
  // Tasks are drawn before any episode runs, so a retry (or a resumed epoch) replays the same draw.
  const jobs = Array.from({ length: options.episodes }, (_, i) => ({
    episodeId: `${options.idPrefix}-${i}`,
    knobs: knobsFor(),
    seed: options.seeds.start + rng.int(span),
  }));
  const actor = textPolicySampler({
    tokenizer,
    policy: slippingExpert(family, options.slipP ?? 0),
    rng: rng.fork(),
    agent: options.layout.agent,
    reasoner: family.reasoner,
  });
  const summarizer = textPolicySampler({
    tokenizer,
    policy: family.summaryWriters.lossy(options.lossyP, options.lossyGoalP),
    rng: rng.fork(),
    agent: options.layout.agent,
    reasoner: family.reasoner,
  });
  const records = await runWithRetries({
    jobs,
    retries: options.retries ?? 1,
    run: (batch) =>
      runEpisodes({
        episodes: batch.map((job) => ({ episodeId: job.episodeId, env: family.create(job.knobs), seed: job.seed })),
        config: options.rollout,
        layout: options.layout,
        ...(family.maxConcurrentEpisodes ? { concurrency: family.maxConcurrentEpisodes } : {}),
        actor,
        summarizer,
      }),
  });
  const { trained, leftOut, retried } = splitFaults({ records, batchEpisodes: jobs.length });
  return { episodes: trained, leftOut, retried };
}

/**
 * Faults in expert data are counted like training's (docs/faults.md): retried, then left out; a
 * set that lost more than faults.maxFraction of its episodes (or all) stops the run, since a base
 * trained on what a broken sandbox let through is a broken base that nothing else would flag.
 */
export function checkExpertFaults(o: {
  expert: ExpertEpisodes;
  label: string;
  faults: FaultPolicy;
  log: ((line: string) => void) | undefined;
}): void {
  const { episodes, leftOut, retried } = o.expert;
  if (leftOut.length === 0 && retried.length === 0) return;
  const total = episodes.length + leftOut.length;
  o.log?.(
    `${o.label}: ${retried.length} expert episodes ended in faults and ran again, ${leftOut.length} of ${total} left out; the first: ${describeFault(leftOut[0] ?? retried[0]!)}`,
  );
  const { maxFraction } = o.faults;
  if (overFaultBudget({ leftOut: leftOut.length, trained: episodes.length, batchEpisodes: total, maxFraction }))
    throw new FaultBudgetError(
      `${o.label}: ${leftOut.length} of ${total} expert episodes ended in faults after their retries (more than faults.maxFraction ${maxFraction}); the first: ${describeFault(leftOut[0]!)}`,
    );
}

/**
 * Segments -> training sequences. exec_j is a prefix of sum_j (method §3: sum_j is the full window
 * h at compaction, then q_sum, then S), so under a causal model training sum_j with the union of
 * both masks gives exactly the same loss and gradient as training both: one forward pass instead
 * of two over the shared window (~40% fewer tokens on kv-ledger).
 */
export function toSequences(options: { records: readonly EpisodeRecord[]; layout?: ChatLayout }): SftSequence[] {
  const out: SftSequence[] = [];
  for (const r of options.records) {
    const segs = r.segments;
    for (let i = 0; i < segs.length; i++) {
      const s = segs[i]!;
      const next = segs[i + 1];
      // A tools-format record says where each turn's reasoning, call and summary lie.
      const turnsOf = (...segments: number[]) =>
        options.layout && r.turns ? r.turns.filter((t) => segments.includes(t.segment)) : null;
      if (s.kind === 'execution' && next && next.kind === 'summary' && isPrefix(s.tokens, next.tokens)) {
        const mask = Uint8Array.from(next.lossMask);
        for (let t = 0; t < s.lossMask.length; t++) mask[t] = mask[t]! | s.lossMask[t]!;
        const tokens = Int32Array.from(next.tokens);
        const turns = turnsOf(i, i + 1);
        out.push(
          turns
            ? turnKinds({ tokens, mask, turns })
            : withKinds({ tokens, mask, summaryFrom: s.tokens.length, layout: options.layout }),
        );
        i++;
        continue;
      }
      const tokens = Int32Array.from(s.tokens);
      const mask = Uint8Array.from(s.lossMask);
      const turns = turnsOf(i);
      out.push(
        turns
          ? turnKinds({ tokens, mask, turns })
          : withKinds({
              tokens,
              mask,
              summaryFrom: s.kind === 'summary' ? 0 : s.tokens.length,
              layout: options.layout,
            }),
      );
    }
  }
  return out;
}

/**
 * Kinds from a tools-format record's turns (docs/agent-format.md): a turn's thinking block is
 * 'reasoning'; an execution turn's call of the `answer` tool is 'answer', as the text format's
 * `answer` action; a summary turn's text after its thinking block (the summary the next window
 * sees, and its stop id) is 'summary'; every other generated token is 'action'.
 */
function turnKinds(o: { tokens: Int32Array; mask: Uint8Array; turns: readonly TurnRecord[] }): SftSequence {
  const kinds: TokenKind[] = Array.from(o.mask, (m) => (m === 1 ? 'action' : 'none'));
  const label = (from: number, to: number, kind: TokenKind) => {
    for (let t = from; t < Math.min(to, kinds.length); t++) if (o.mask[t] === 1) kinds[t] = kind;
  };
  for (const turn of o.turns) {
    const thought = turn.start + turn.reasoningTokens;
    label(turn.start, thought, 'reasoning');
    if (turn.stage === 'summarize') label(thought, turn.end, 'summary');
    else if (turn.call?.name === 'answer' && turn.call.span) label(turn.call.span[0], turn.call.span[1], 'answer');
  }
  return { tokens: o.tokens, mask: o.mask, kinds };
}

function isPrefix(a: readonly number[], b: readonly number[]): boolean {
  if (a.length > b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Labels masked positions (only when a layout is given): summary from summaryFrom on; else, per
 * generated run (one action), 'answer' for the tokens after a leading `answer` word (its stop id
 * excluded) and 'action' for the rest. Runs are matched on token ids, not single-token words, so
 * any tokenizer labels the same text the same way.
 */
function withKinds(o: {
  tokens: Int32Array;
  mask: Uint8Array;
  summaryFrom: number;
  layout: ChatLayout | undefined;
}): SftSequence {
  if (!o.layout) return { tokens: o.tokens, mask: o.mask };
  const answer = o.layout.tokenizer.encode('answer');
  const kinds: TokenKind[] = Array.from({ length: o.tokens.length }, () => 'none');
  let t = 0;
  while (t < o.tokens.length) {
    if (o.mask[t] !== 1) {
      t++;
      continue;
    }
    let end = t;
    while (end < o.tokens.length && o.mask[end] === 1) end++;
    const isAnswer = answer.every((id, k) => t + k < end && o.tokens[t + k] === id);
    for (let k = t; k < end; k++) {
      if (k >= o.summaryFrom) kinds[k] = 'summary';
      else
        kinds[k] =
          isAnswer && k >= t + answer.length && !(k === end - 1 && o.tokens[k] === o.layout.actStop)
            ? 'answer'
            : 'action';
    }
    t = end;
  }
  return { tokens: o.tokens, mask: o.mask, kinds };
}
