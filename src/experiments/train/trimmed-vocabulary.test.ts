import { describe, expect, it } from 'vitest';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { overFamilySizes, resolveRolloutConfig } from '../../rollout/config.ts';
import { Rng } from '../../util/random.ts';
import { encodeDense } from '../sft/dense-encoding.ts';
import { chooseVocabulary } from './trimmed-vocabulary.ts';

// The dense warm-up supervises what encodeDense lays out, which in the tools format is a call or a
// reasoning block around the part's text. An id the set missed is trained onto the unknown slot
// (a loss near 1e29: the warm-up then learns nothing), so every supervised id must be in the set.
describe('the trimmed vocabulary', () => {
  for (const thinking of [true, false]) {
    it(`covers every id the kv-ledger dense warm-up supervises in the tools format, thinking ${thinking ? 'on' : 'off'}`, async () => {
      const tokenizer = loadTokenizer('qwen3');
      const family = getFamily('kv-ledger');
      const knobs = { queries: 1, overwriteRate: 0, minChunks: 1, chunks: 12, valueWords: true };
      const { config: rollout, layout } = resolveRolloutConfig({
        input: overFamilySizes(family.rollout, { agentFormat: 'tools', thinking }),
        tokenizer,
        tools: family.tools ?? null,
      });
      const vocab = await chooseVocabulary({ tokenizer, layout, rollout, family, knobs });
      const rng = new Rng(12345); // not the set's own seed: other sequences than the ones it read
      const missed = new Set<string>();
      let supervised = 0;
      for (let i = 0; i < 64; i++) {
        const parts = family.sft!.dense!({
          rng,
          knobs: family.knobs.parse(knobs),
          maxChunks: 8,
          probes: 16,
          summaryShare: 0.5,
        });
        const e = encodeDense(parts, layout, rollout.contextWindow, family.reasoner);
        for (const t of e.answerAt) {
          supervised++;
          if (!vocab.covers(e.tokens[t]!)) missed.add(tokenizer.tokenizer.decode([e.tokens[t]!]));
        }
      }
      expect(supervised).toBeGreaterThan(1000);
      expect([...missed]).toEqual([]);
    }, 120_000);
  }
});
