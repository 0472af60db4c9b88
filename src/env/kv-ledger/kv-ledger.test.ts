import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WordTokenizer } from '../../model/tokenizer/tokenizer.ts';
import { KnobsError } from '../knobs.ts';
import { playDirect } from '../testing/direct-episode.ts';
import { VALUE_WORDS } from '../value-words.ts';
import { generateKvLedger, verifyKvLedger, kvLedger, kvLedgerKnobs, KvLedgerEnv } from './index.ts';

const tok = new WordTokenizer();
const defaults = kvLedgerKnobs.parse({});

describe('kv-ledger', () => {
  it('generates the same task for the same seed and different tasks for different seeds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000_000 }), (seed) => {
        expect(generateKvLedger(seed, defaults)).toEqual(generateKvLedger(seed, defaults));
      }),
      { numRuns: 50 },
    );
    const a = JSON.stringify(generateKvLedger(1, defaults));
    const b = JSON.stringify(generateKvLedger(2, defaults));
    expect(a).not.toBe(b);
  });

  it('the expert (one unbounded window) is always right, and any perturbed answer is rejected', () => {
    for (let seed = 0; seed < 60; seed++) {
      for (const variant of [{}, { valueWords: true }, ...Object.values(kvLedger.variants)]) {
        const env = new KvLedgerEnv(variant);
        const ep = playDirect({ env, seed, policy: kvLedger.expert });
        expect(ep.reward).toBe(1);
        const answer = ep.actions[ep.actions.length - 1]!.split(' ').slice(1);
        const task = env.current;
        expect(verifyKvLedger(task, answer)).toBe(true);
        const i = seed % answer.length;
        const wrong = [...answer];
        wrong[i] = answer[i] === 'none' ? '7' : answer[i] === '7' ? '8' : 'none';
        expect(verifyKvLedger(task, wrong)).toBe(false);
        expect(verifyKvLedger(task, answer.slice(0, -1))).toBe(false);
      }
    }
  });

  it('keeps observations <= 32 tokens and actions <= 12 at the largest knobs', () => {
    const env = new KvLedgerEnv({ chunkOps: 7, queries: 8, keys: 10, queryPosition: 'end' });
    for (let seed = 0; seed < 30; seed++) {
      const ep = playDirect({ env, seed, policy: kvLedger.expert });
      for (const o of ep.observations) expect(tok.encode(o).length).toBeLessThanOrEqual(32);
      for (const a of ep.actions) expect(tok.encode(a).length).toBeLessThanOrEqual(11); // + <eot> = 12
    }
  });

  it('valueWords writes the same task with value words for the numbers', () => {
    for (let seed = 0; seed < 20; seed++) {
      const numbers = new KvLedgerEnv({});
      const words = new KvLedgerEnv({ valueWords: true });
      numbers.reset(seed);
      words.reset(seed);
      expect(words.current.chunks).toEqual(numbers.current.chunks);
      expect(words.current.answer).toEqual(
        numbers.current.answer.map((a) => (a === 'none' ? a : VALUE_WORDS[Number(a)])),
      );
      const shown = words.step('read').observation;
      expect(shown).toBe(
        numbers
          .step('read')
          .observation.replace(/(set [a-z]) (\d+)/g, (_, k: string, v: string) => `${k} ${VALUE_WORDS[Number(v)]}`),
      );
    }
    // With value words an answer may name each key before its value; the keys must be the queries.
    const task = generateKvLedger(4, kvLedgerKnobs.parse({ valueWords: true, queries: 2 }));
    const [q1, q2] = task.queries;
    const [v1, v2] = task.answer;
    expect(verifyKvLedger(task, [v1!, v2!])).toBe(true);
    expect(verifyKvLedger(task, [q1!, v1!, q2!, v2!])).toBe(true);
    expect(verifyKvLedger(task, [q2!, v1!, q1!, v2!])).toBe(false);
    expect(verifyKvLedger(task, [q1!, v2!, q2!, v1!])).toBe(false);
    const numbers = generateKvLedger(4, kvLedgerKnobs.parse({ queries: 2 }));
    expect(verifyKvLedger(numbers, [q1!, numbers.answer[0]!, q2!, numbers.answer[1]!])).toBe(false);
    const played = playDirect({
      env: new KvLedgerEnv({ valueWords: true, queries: 2 }),
      seed: 4,
      policy: kvLedger.expert,
    });
    expect(played.actions[played.actions.length - 1]).toBe(`answer ${q1} ${v1} ${q2} ${v2}`);
    const env = new KvLedgerEnv({ valueWords: true, chunks: 3, minChunks: 3 });
    env.reset(1);
    expect(env.step('read').observation).toMatch(/set [a-z] [a-z]{3,}/);
  });

  it('rejects unknown and out-of-range knobs with a readable error', () => {
    expect(() => new KvLedgerEnv({ chunks: 0 })).toThrow(KnobsError);
    expect(() => new KvLedgerEnv({ bogus: 1 } as never)).toThrow(/bogus/);
    expect(() => new KvLedgerEnv({ queries: 9 })).toThrow(/queries/);
  });

  it('answers invalid actions without ending the episode', () => {
    const env = new KvLedgerEnv();
    env.reset(3);
    expect(env.step('go north')).toEqual({ observation: 'invalid action', done: false, reward: 0 });
  });

  it('refuses an answer before the end of the stream (even a right one) and accepts it after', () => {
    const env = new KvLedgerEnv({ chunks: 2 });
    env.reset(5);
    const right = `answer ${env.current.answer.join(' ')}`;
    env.step('read');
    expect(env.step(right)).toEqual({ observation: 'invalid action . read all , then answer', done: false, reward: 0 });
    env.step('read');
    expect(env.step('read').observation).toBe('end');
    expect(env.step(right)).toEqual({ observation: 'correct', done: true, reward: 1 });
  });
});
