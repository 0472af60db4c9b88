import type { DensePart, TaskFamily } from '../../env/family.ts';
import { recallForm, recallValueWords } from '../../env/recall-form.ts';
import type { LoadedTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { VocabMap } from '../../model/tokenizer/vocab-map.ts';
import { encodeDense } from '../sft/dense-encoding.ts';
import { CUT_MARKER, type ChatLayout } from '../../rollout/chat-layout.ts';
import type { RolloutConfig } from '../../rollout/config.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { mixSeed, Rng } from '../../util/random.ts';

/**
 * The embedded model's vocabulary for a task family (docs/decisions/0013-trimmed-vocabulary.md).
 * The word tokenizer is small enough to use whole (the identity map). For a real tokenizer the
 * trimmed set is every id of:
 *   - the chat layout: each turn's opening and closing, the generation prompt, q_sum, u_resume's
 *     prefix, the format's prefix, the cut marker;
 *   - printable ASCII characters one at a time, and '\n' (so any ASCII text has some encoding);
 *   - records of the family's scripted expert with the oracle and a lossy(0.5) summary writer
 *     (their tokens, and each of their words encoded alone and after a space),
 *     EPISODES per knob setting: the given knobs, each mix entry and each held-out variant, on
 *     training and evaluation seeds, with the run's rollout config (its caps, so cut observations
 *     are covered too);
 *   - DENSE sequences of the family's dense warm-up forms and of the recall form.
 * Everything is seeded, so the same tokenizer, family and knobs always give the same set.
 */
const EPISODES = 48;
const DENSE = 256;

export async function chooseVocabulary(options: {
  tokenizer: LoadedTokenizer;
  layout: ChatLayout;
  rollout: RolloutConfig;
  family: TaskFamily;
  knobs: Record<string, unknown>;
  /** Extra knob settings the run trains on (SFT mix entries), on top of `knobs`. */
  extraKnobs?: readonly Record<string, unknown>[];
}): Promise<VocabMap> {
  const { tokenizer: source, layout, family } = options;
  const tok = source.tokenizer;
  const ref = { name: source.name, sha256: source.sha256 };
  if (tok.wordLevel) return VocabMap.identity(tok.vocabSize, ref);
  const ids = new Set<number>();
  const add = (xs: Iterable<number>) => {
    for (const x of xs) ids.add(x);
  };
  const f = layout.format;
  add(f.prefix);
  for (const t of Object.values(f.turns)) add([...t.open, ...t.close]);
  add([...layout.systemTurn, ...layout.actionOpen, ...layout.actionSeam, ...layout.summaryPrompt]);
  add([...layout.summarySeam, ...layout.resumeOpen]);
  add(tok.encode(CUT_MARKER));
  for (let c = 32; c < 127; c++) add(tok.encode(String.fromCharCode(c)));
  add(tok.encode('\n'));
  const words = new Set<string>();
  const addWords = (text: string): void => {
    for (const w of text.split(/\s+/)) {
      if (w === '' || words.has(w)) continue;
      words.add(w);
      add(tok.encode(w));
      add(tok.encode(` ${w}`));
    }
  };

  const settings = [
    options.knobs,
    ...(options.extraKnobs ?? []).map((k) => ({ ...options.knobs, ...k })),
    ...Object.values(family.variants).map((v) => ({ ...options.knobs, ...v })),
  ];
  const writers = [family.summaryWriters.oracle, family.summaryWriters.lossy(0.5)];
  let n = 0;
  for (const knobs of settings) {
    for (const writer of writers) {
      const rng = new Rng(mixSeed(0x70c, n++));
      const records = await runEpisodes({
        episodes: Array.from({ length: EPISODES }, (_, i) => {
          const range = i % 2 === 0 ? family.trainSeeds : family.evalSeeds;
          return {
            episodeId: `vocab-${i}`,
            env: family.create(knobs),
            seed: range.start + rng.int(range.end - range.start),
          };
        }),
        config: options.rollout,
        layout,
        actor: textPolicySampler({
          tokenizer: source,
          policy: family.expert,
          rng: rng.fork(),
          agent: layout.agent,
          reasoner: family.reasoner,
        }),
        summarizer: textPolicySampler({
          tokenizer: source,
          policy: writer,
          rng: rng.fork(),
          agent: layout.agent,
          reasoner: family.reasoner,
        }),
      });
      for (const r of records) for (const s of r.segments) add(s.tokens);
      // Every word of those episodes also as it encodes after a space and at the start of a turn:
      // a summary that dropped its first clause starts with a word seen only mid-text otherwise
      // (shell-ledger's `port = 41`, Qwen3 `port` vs ` port`), and 48 episodes do not meet every such case.
      for (const r of records) for (const s of r.segments) addWords(tok.decode(s.tokens));
    }
  }

  const rng = new Rng(0xde75e);
  const denseTexts = (parts: readonly DensePart[]) => {
    for (const p of parts) {
      add(tok.encode(p.text.trim()));
      add(tok.encode(` ${p.text.trim()}`)); // as it reads inside a run of context text
    }
    // And as the warm-up lays them out: in the tools format a reply or summary part is a call or
    // a reasoning block whose ids the raw text never shows (the JSON around a value); those were
    // supervised onto the unknown slot, whose pinned logit made the warm-up's loss 1e29.
    add(encodeDense(parts, layout, Number.MAX_SAFE_INTEGER, family.reasoner).tokens);
  };
  const valueWords = recallValueWords(family, options.knobs);
  for (let i = 0; i < DENSE; i++) denseTexts(recallForm({ rng, probes: 8, valueWords }));
  if (family.sft?.dense) {
    const knobs = family.knobs.parse(options.knobs);
    for (let i = 0; i < DENSE; i++)
      denseTexts(family.sft?.dense({ rng, knobs, maxChunks: 12, probes: 16, summaryShare: 0.5 }));
  }
  return VocabMap.trimmed(ids, ref);
}
