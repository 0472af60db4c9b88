import { DenseChat } from '../dense-chat.ts';
import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { words } from '../visible-window.ts';
import { HopSearchEnv } from './env.ts';
import { hopSearchExpert } from './expert.ts';
import type { HopSearchKnobs } from './knobs.ts';

/** Tokens a sequence is filled to (C of the default rollout config; encodeDense cuts the rest). */
const SEQUENCE_TOKENS = 256;
/** The runtime's summary request q_sum with its turn markers, about (only for filling). */
const SUMMARY_REQUEST_TOKENS = 12;

/**
 * Dense warm-up text for hop-search (docs/sft.md; docs/tasks.md, hop-search): whole expert
 * episodes of real generated tasks, in the episode's chat layout, one after another until the
 * sequence is full. Every agent turn is a supervised reply, and each is a copy or a one-key lookup
 * (`search` copies the start entity and the next relation from the question, or the value after
 * the relation in the document just opened; `open` copies the id after `results`; `answer` reads
 * the last hop's value). A sequence holds ~20 decisions.
 *
 * Chains are 1..hops long, so several fit in one sequence. With probability summaryShare an episode
 * is compacted once at a random step: the runtime's summary request, the supervised oracle summary,
 * then the rebuilt window (the summary as the head, the newest two steps verbatim) in which the
 * episode goes on to its answer. The head here is the summary alone: the runtime's resume prefix is
 * a template the family does not know, and the expert's parser ignores it anyway.
 */
export function hopSearchDense(options: { rng: Rng; knobs: HopSearchKnobs; summaryShare: number }): DensePart[] {
  const parts: DensePart[] = [];
  while (tokensOf(parts) < SEQUENCE_TOKENS) episode(options.rng, options.knobs, options.summaryShare, parts);
  return parts;
}

function episode(rng: Rng, knobs: HopSearchKnobs, summaryShare: number, parts: DensePart[]): void {
  // 1..hops: chains of 2..6 hops (more lookups per token) gave a worse base (docs/tasks.md, hop-search).
  const hops = 1 + rng.int(knobs.hops);
  const env = new HopSearchEnv({ ...knobs, hops, minHops: hops });
  const { instruction } = env.reset(rng.int(1_000_000));
  const chat = new DenseChat(hopSearchExpert, rng, instruction, parts);
  const steps: [string, string][] = [];
  // After cutAt steps (1 .. all but the answer), when the episode is compacted at all.
  const cutAt = rng.next() < summaryShare ? 1 + rng.int(2 * knobs.questions * hops) : -1;
  for (;;) {
    if (steps.length === cutAt) chat.rebuild(chat.summary(), steps.slice(-2));
    const action = chat.reply();
    const out = env.step(action);
    chat.observe(out.observation);
    steps.push([action, out.observation]);
    if (out.done) return;
  }
}

/** Tokens the parts take in the chat layout (one token per word, two turn markers per turn), about. */
function tokensOf(parts: readonly DensePart[]): number {
  return parts.reduce((n, p) => n + words(p.text).length + 2 + (p.kind === 'summary' ? SUMMARY_REQUEST_TOKENS : 0), 0);
}
