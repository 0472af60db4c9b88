import { describe, expect, it } from 'vitest';
import { generateFogCourier } from './fog-courier/generate.ts';
import { fogCourierKnobs } from './fog-courier/knobs.ts';
import { generateHopSearch } from './hop-search/generate.ts';
import { hopSearchKnobs } from './hop-search/knobs.ts';
import { drawHorizon } from './horizon.ts';
import { generateKvLedger } from './kv-ledger/generate.ts';
import { kvLedgerKnobs } from './kv-ledger/knobs.ts';

describe('per-task horizons (src/env/horizon.ts)', () => {
  it('draws every length of the range, about uniformly, the same for the same seed', () => {
    const counts = new Map<number, number>();
    for (let seed = 0; seed < 2800; seed++) {
      const h = drawHorizon({ salt: 7, seed, min: 1, max: 14 });
      expect(drawHorizon({ salt: 7, seed, min: 1, max: 14 })).toBe(h);
      counts.set(h, (counts.get(h) ?? 0) + 1);
    }
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    for (const c of counts.values()) expect(Math.abs(c - 200)).toBeLessThan(60); // 200 expected, sd ~14
    expect(drawHorizon({ salt: 7, seed: 3, min: 5, max: 5 })).toBe(5);
    expect(() => drawHorizon({ salt: 7, seed: 3, min: 6, max: 5 })).toThrow(/min <= max/);
  });

  // A task of drawn length L is the fixed-length task at L: the draw has its own stream, so the
  // fixed-horizon variants reproduce the earlier generator exactly.
  it('kv-ledger: a drawn-length task equals the fixed-length task of that length', () => {
    for (let seed = 0; seed < 40; seed++) {
      const task = generateKvLedger(seed, kvLedgerKnobs.parse({}));
      const L = task.chunks.length;
      expect(generateKvLedger(seed, kvLedgerKnobs.parse({ minChunks: L, chunks: L }))).toEqual(task);
    }
  });

  it('fog-courier: the same for route lengths (r - 1 .. r + 1 moves around the drawn r)', () => {
    const k = fogCourierKnobs.parse({});
    for (let seed = 0; seed < 40; seed++) {
      const r = drawHorizon({ salt: 0x666f67, seed, min: k.minRoute, max: k.route });
      expect(generateFogCourier(seed, k)).toEqual(generateFogCourier(seed, { ...k, minRoute: r, route: r }));
    }
  });

  it('hop-search: the same for chain lengths', () => {
    for (let seed = 0; seed < 40; seed++) {
      const task = generateHopSearch(seed, hopSearchKnobs.parse({}));
      const h = task.questions[0]!.rels.length;
      expect(generateHopSearch(seed, hopSearchKnobs.parse({ minHops: h, hops: h }))).toEqual(task);
    }
  });

  it('rejects a range whose minimum is above its maximum, naming the knob', () => {
    expect(kvLedgerKnobs.safeParse({ minChunks: 9, chunks: 4 }).error?.issues[0]?.message).toMatch(/minChunks/);
    expect(fogCourierKnobs.safeParse({ minRoute: 9, route: 4 }).error?.issues[0]?.message).toMatch(/minRoute/);
    expect(hopSearchKnobs.safeParse({ minHops: 3, hops: 2 }).error?.issues[0]?.message).toMatch(/minHops/);
  });
});
