import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WordTokenizer } from '../../model/tokenizer/tokenizer.ts';
import type { ChatMessage } from '../../contracts/index.ts';
import { Rng } from '../../util/random.ts';
import { KnobsError } from '../knobs.ts';
import { playDirect } from '../testing/direct-episode.ts';
import { FogCourierEnv, fogCourier, fogCourierKnobs, generateFogCourier, verifyFogCourier } from './index.ts';
import { DIRECTIONS, OPPOSITE } from './generate.ts';

const tok = new WordTokenizer();
const defaults = fogCourierKnobs.parse({});

describe('fog-courier', () => {
  it('generates the same task for the same seed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000_000 }), (seed) => {
        expect(generateFogCourier(seed, defaults)).toEqual(generateFogCourier(seed, defaults));
      }),
      { numRuns: 50 },
    );
    expect(JSON.stringify(generateFogCourier(1, defaults))).not.toBe(JSON.stringify(generateFogCourier(2, defaults)));
  });

  it('lays a consistent map: exits pair up, the signposts walk the route, every route room is a real choice', () => {
    for (let seed = 0; seed < 100; seed++) {
      for (const variant of [{}, ...Object.values(fogCourier.variants)]) {
        const k = fogCourierKnobs.parse(variant);
        const task = generateFogCourier(seed, k);
        task.rooms.forEach((r, i) => {
          for (const d of DIRECTIONS) {
            const j = r.exits[d];
            if (j !== undefined) expect(task.rooms[j]!.exits[OPPOSITE[d]]).toBe(i);
          }
        });
        expect(new Set(task.rooms.map((r) => r.id)).size).toBe(task.rooms.length);
        const moves = task.route.length - 1;
        expect(moves).toBeGreaterThanOrEqual(k.minRoute - 1);
        expect(moves).toBeLessThanOrEqual(k.route + 1);
        expect(task.way).toHaveLength(moves + 1);
        expect(task.way[moves]).toEqual({ id: task.rooms[task.target]!.id, dir: 'drop' });
        task.way.slice(0, moves).forEach((s, i) => {
          const from = task.rooms[task.route[i]!]!;
          expect(s.id).toBe(from.id);
          expect(from.exits[s.dir as (typeof DIRECTIONS)[number]]).toBe(task.route[i + 1]);
          // branching exits besides the way back (fewer only when the four directions run out)
          const besidesBack = Object.keys(from.exits).length - (i === 0 ? 0 : 1);
          expect(besidesBack).toBe(Math.min(k.branching, i === 0 ? 4 : 3));
        });
        expect(task.target).toBe(task.route[moves]);
        expect(task.route.slice(1, -1)).toContain(task.itemRoom);
        expect(task.rooms[task.itemRoom]!.items).toContain(task.item);
        expect(task.budget).toBe(Math.ceil((1 + k.slack) * (moves + 2)) + 1);
        // Distractors only off the way: on it the only item is the one to take.
        for (const r of task.route) expect(task.rooms[r]!.items).toEqual(r === task.itemRoom ? [task.item] : []);
      }
    }
  });

  it('the expert (one unbounded window) always delivers; the verifier rejects a misplaced item', () => {
    for (let seed = 0; seed < 60; seed++) {
      for (const variant of [{}, ...Object.values(fogCourier.variants)]) {
        const env = new FogCourierEnv(variant);
        const ep = playDirect({ env, seed, policy: fogCourier.expert });
        expect(ep.reward).toBe(1);
        const task = env.current;
        expect(ep.actions).toHaveLength(task.way.length + 2); // every move, take, drop, done
        // Perturbed outcome: the item left in its own room (or in any room but the target).
        expect(verifyFogCourier(task, task.rooms)).toBe(false);
        const moved = task.rooms.map((r, i) => ({
          ...r,
          items: i === task.target ? [] : i === 0 ? [...r.items, task.item] : r.items,
        }));
        expect(verifyFogCourier(task, moved)).toBe(false);
      }
    }
  });

  it('the expert finds its way back from a wrong turn into a side room', () => {
    for (let seed = 0; seed < 40; seed++) {
      const env = new FogCourierEnv({ slack: 1 });
      const { instruction } = env.reset(seed);
      const task = env.current;
      const wrong = DIRECTIONS.find((d) => task.rooms[0]!.exits[d] !== undefined && d !== task.way[0]!.dir)!; // a side room
      const messages: ChatMessage[] = [{ role: 'user', content: instruction }];
      let out = env.step(`go ${wrong}`);
      messages.push({ role: 'assistant', content: `go ${wrong}` }, { role: 'observation', content: out.observation });
      for (let i = 0; i < 20 && !out.done; i++) {
        const a = fogCourier.expert(messages, new Rng(seed));
        out = env.step(a);
        messages.push({ role: 'assistant', content: a }, { role: 'observation', content: out.observation });
      }
      expect(out.reward).toBe(1);
    }
  });

  it('keeps observations <= 32 tokens, actions <= 11 (+ <eot>), the instruction <= 64', () => {
    const env = new FogCourierEnv({ distractors: 20, branching: 3, route: 9 });
    for (let seed = 0; seed < 30; seed++) {
      const ep = playDirect({ env, seed, policy: fogCourier.expert });
      expect(tok.encode(ep.instruction).length).toBeLessThanOrEqual(64);
      for (const o of ep.observations) expect(tok.encode(o).length).toBeLessThanOrEqual(32);
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
    expect(() => new FogCourierEnv({ route: 100 })).toThrow(KnobsError);
    expect(() => new FogCourierEnv({ doors: 2 } as never)).toThrow(/doors/);
  });
});
