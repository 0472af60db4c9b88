import { describe, expect, it } from 'vitest';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/random.ts';
import { BUILTIN_FAMILIES, KNOWN_FAMILIES } from './builtin.ts';
import { KnobsError, variantKnobs } from './knobs.ts';
import { familyNames, getFamily } from './registry.ts';
import { playDirect } from './testing/direct-episode.ts';
import { runExpertEpisodes } from '../experiments/testing/runtime-episodes.ts';

const tok = new WordTokenizer();

describe('built-in task suite', () => {
  it('finds every known family from the first lookup, with no registration call before it', () => {
    // The first registry call of this test file: shell-ledger once needed another call first.
    expect(getFamily('shell-ledger').name).toBe('shell-ledger');
    expect(familyNames()).toEqual(KNOWN_FAMILIES.map((f) => f.name).sort());
    expect(familyNames()).toEqual(expect.arrayContaining(['fog-courier', 'hop-search', 'kv-ledger', 'chunk-sum']));
    expect(getFamily('kv-ledger').name).toBe('kv-ledger');
    expect(() => getFamily('kv-ledgr')).toThrow(/valid names: .*fog-courier.*hop-search.*kv-ledger/);
  });

  it('keeps train and evaluation seed ranges disjoint', () => {
    for (const f of BUILTIN_FAMILIES) {
      expect(f.trainSeeds.start).toBeLessThan(f.trainSeeds.end);
      expect(f.evalSeeds.start).toBeLessThan(f.evalSeeds.end);
      expect(f.trainSeeds.end <= f.evalSeeds.start || f.evalSeeds.end <= f.trainSeeds.start).toBe(true);
    }
  });

  it('selects held-out variants by name; an unknown name lists the valid ones', () => {
    for (const f of BUILTIN_FAMILIES) {
      expect(Object.keys(f.variants).length).toBeGreaterThanOrEqual(2);
      for (const v of Object.keys(f.variants)) expect(() => f.create(variantKnobs(f, v))).not.toThrow();
      expect(variantKnobs(f, 'default')).toEqual({});
      expect(() => variantKnobs(f, 'nope')).toThrow(KnobsError);
      expect(() => variantKnobs(f, 'nope')).toThrow(/valid variants: default, /);
    }
  });

  // Vocabulary closure: the runtime encodes every instruction, observation, action and summary
  // with the closed tokenizer, which throws on any unknown word; observations must also fit 32.
  it('emits only vocabulary words, in every variant, with every writer (through the runtime)', async () => {
    for (const f of BUILTIN_FAMILIES) {
      for (const v of ['default', ...Object.keys(f.variants)]) {
        const seeds = [...Array.from({ length: 15 }, (_, i) => f.trainSeeds.start + 97 * i), f.evalSeeds.start + 3];
        for (const writer of ['oracle', 'self', { lossy: 0.5 }] as const) {
          const recs = await runExpertEpisodes({ family: f, knobs: variantKnobs(f, v), seeds, writer, windows: 4 });
          for (const r of recs) expect(r.events.filter((e) => e.kind === 'observation-cut')).toEqual([]);
        }
      }
    }
  });

  it('the text of whole unbounded episodes tokenizes, for random seeds', () => {
    const rng = new Rng(11);
    for (const f of BUILTIN_FAMILIES) {
      for (let i = 0; i < 40; i++) {
        const ep = playDirect({ env: f.create({}), seed: rng.int(2_000_000), policy: f.expert });
        for (const m of ep.messages) expect(() => tok.encode(m.content)).not.toThrow();
      }
    }
  });
});
