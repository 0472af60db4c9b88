import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WordTokenizer } from '../../model/tokenizer.ts';
import { KnobsError } from '../knobs.ts';
import { playDirect } from '../testing/direct-episode.ts';
import { FogCourierEnv, fogCourier, fogCourierKnobs, generateFogCourier, verifyFogCourier } from './index.ts';
import { DIRECTIONS, OPPOSITE, preorder } from './generate.ts';

const tok = new WordTokenizer();
const defaults = fogCourierKnobs.parse({});

describe('fog-courier', () => {
  it('generates the same tree for the same seed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000_000 }), (seed) => {
        expect(generateFogCourier(seed, defaults)).toEqual(generateFogCourier(seed, defaults));
      }),
      { numRuns: 50 },
    );
    expect(JSON.stringify(generateFogCourier(1, defaults))).not.toBe(JSON.stringify(generateFogCourier(2, defaults)));
  });

  it('builds a consistent tree: every exit has its way back, the target comes before the item in search order', () => {
    for (let seed = 0; seed < 100; seed++) {
      for (const variant of [{}, ...Object.values(fogCourier.variants)]) {
        const task = generateFogCourier(seed, fogCourierKnobs.parse(variant));
        task.rooms.forEach((r, i) => {
          for (const d of DIRECTIONS) {
            const j = r.exits[d];
            if (j !== undefined) expect(task.rooms[j]!.exits[OPPOSITE[d]]).toBe(i);
          }
        });
        const order = preorder(task.rooms);
        expect(order).toHaveLength(task.rooms.length);
        expect(order.indexOf(task.target)).toBeLessThan(order.indexOf(task.itemRoom));
        expect(new Set(task.rooms.map((r) => r.id)).size).toBe(task.rooms.length);
      }
    }
  });

  it('the expert (one unbounded window) always delivers; the verifier rejects a misplaced item', () => {
    for (let seed = 0; seed < 60; seed++) {
      for (const variant of [{}, ...Object.values(fogCourier.variants)]) {
        const env = new FogCourierEnv(variant);
        const ep = playDirect({ env, seed, policy: fogCourier.expert });
        expect(ep.reward).toBe(1);
        expect(ep.actions.length).toBeLessThanOrEqual(env.current.budget);
        const task = env.current;
        // Perturbed outcome: the item left in its own room (or in any room but the target).
        expect(verifyFogCourier(task, task.rooms)).toBe(false);
        const moved = task.rooms.map((r, i) => ({ ...r, items: i === task.target ? [] : i === 0 ? [...r.items, task.item] : r.items }));
        expect(verifyFogCourier(task, moved)).toBe(false);
      }
    }
  });

  it('keeps observations <= 32 tokens and actions <= 11 (+ <eot>)', () => {
    const env = new FogCourierEnv({ distractors: 20, branching: 3 });
    for (let seed = 0; seed < 30; seed++) {
      const ep = playDirect({ env, seed, policy: fogCourier.expert });
      for (const o of [ep.instruction, ...ep.observations]) expect(tok.encode(o).length).toBeLessThanOrEqual(32);
      for (const a of ep.actions) expect(tok.encode(a).length).toBeLessThanOrEqual(11);
    }
  });

  it('ends with reward 0 when the step budget runs out, and on done in the wrong room', () => {
    const env = new FogCourierEnv();
    const { budget } = (env.reset(4), env.current);
    let last = { done: false, reward: 1 };
    for (let i = 0; i < budget && !last.done; i++) last = env.step('look');
    expect(last).toMatchObject({ done: true, reward: 0 });
    env.reset(4);
    expect(env.step('done')).toEqual({ observation: 'wrong', done: true, reward: 0 });
  });

  it('rejects bad knobs with a readable error', () => {
    expect(() => new FogCourierEnv({ rooms: 100 })).toThrow(KnobsError);
    expect(() => new FogCourierEnv({ doors: 2 } as never)).toThrow(/doors/);
  });
});
