import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WordTokenizer } from '../../model/tokenizer.ts';
import { KnobsError } from '../knobs.ts';
import { playDirect } from '../testing/direct-episode.ts';
import { generateHopSearch, HopSearchEnv, hopSearch, hopSearchKnobs, verifyHopSearch } from './index.ts';

const tok = new WordTokenizer();
const defaults = hopSearchKnobs.parse({});

describe('hop-search', () => {
  it('generates the same collection for the same seed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000_000 }), (seed) => {
        expect(generateHopSearch(seed, defaults)).toEqual(generateHopSearch(seed, defaults));
      }),
      { numRuns: 50 },
    );
    expect(JSON.stringify(generateHopSearch(1, defaults))).not.toBe(JSON.stringify(generateHopSearch(2, defaults)));
  });

  it('answers are determined by the documents: each hop has exactly one fact', () => {
    for (let seed = 0; seed < 100; seed++) {
      const task = generateHopSearch(seed, defaults);
      const facts = task.docs.flatMap((d) => d.facts);
      const keys = facts.map((f) => `${f.rel} ${f.subject}`);
      expect(new Set(keys).size).toBe(keys.length);
      for (const q of task.questions) {
        let cur = q.entity;
        for (const rel of [...q.rels].reverse()) cur = facts.find((f) => f.rel === rel && f.subject === cur)!.value;
        expect(cur).toBe(q.answer);
      }
    }
  });

  it('the expert (one unbounded window) is always right; perturbed answers are rejected', () => {
    for (let seed = 0; seed < 60; seed++) {
      for (const variant of [{}, ...Object.values(hopSearch.variants)]) {
        const env = new HopSearchEnv(variant);
        const ep = playDirect({ env, seed, policy: hopSearch.expert });
        expect(ep.reward).toBe(1);
        const answer = ep.actions[ep.actions.length - 1]!.split(' ').slice(1);
        expect(verifyHopSearch(env.current, answer)).toBe(true);
        const wrong = [...answer];
        wrong[0] = answer[0] === 'a' ? 'b' : 'a';
        expect(verifyHopSearch(env.current, wrong)).toBe(false);
        expect(verifyHopSearch(env.current, [...answer, 'a'])).toBe(false);
      }
    }
  });

  it('keeps observations <= 32 tokens and actions <= 11 (+ <eot>)', () => {
    const env = new HopSearchEnv({ factsPerDoc: 4, docs: 30, distractors: 30 });
    for (let seed = 0; seed < 30; seed++) {
      const ep = playDirect({ env, seed, policy: hopSearch.expert });
      for (const o of ep.observations) expect(tok.encode(o).length).toBeLessThanOrEqual(32);
      for (const a of ep.actions) expect(tok.encode(a).length).toBeLessThanOrEqual(11);
    }
  });

  it('rejects knob combinations whose oracle summary could not fit 48 tokens', () => {
    expect(() => new HopSearchEnv({ questions: 3, hops: 3 })).toThrow(KnobsError);
    expect(() => new HopSearchEnv({ questions: 3, hops: 3 })).toThrow(/48 tokens/);
    expect(() => new HopSearchEnv({ rooms: 3 } as never)).toThrow(/rooms/);
  });
});
