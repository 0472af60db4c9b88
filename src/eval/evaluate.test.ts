import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng, mixSeed } from '../util/random.ts';
import { evaluate, type EpisodeBatchRunner } from './evaluate.ts';
import { readEvalResult } from './eval-result.ts';

/**
 * A toy task with a known answer: a task "needs" seed % 4 + 1 windows and succeeds with
 * probability 0.9 when given enough windows, else it is truncated. Pass@1 at K is therefore known.
 */
const toyRunner: EpisodeBatchRunner = async ({ episodes, windows }) =>
  episodes.map(({ seed, sample }) => {
    const need = (seed % 4) + 1;
    const rng = new Rng(mixSeed(seed, sample, windows));
    if (need > windows)
      return { reward: 0, compactions: windows - 1, outcome: 'truncated' as const, generatedTokens: 10 * windows };
    const ok = rng.next() < 0.9;
    return {
      reward: ok ? 1 : 0,
      compactions: need - 1,
      outcome: ok ? ('success' as const) : ('failure' as const),
      generatedTokens: 10 * need,
    };
  });

describe('evaluate', () => {
  it('reports x1 and x4 at the same C with n samples per task', async () => {
    const taskSeeds = Array.from({ length: 40 }, (_, i) => 1000 + i);
    const r = await evaluate({
      run: toyRunner,
      system: 'toy',
      policy: 'expert',
      env: 'toy',
      variant: 'default',
      summaryWriter: 'self',
      contextWindow: 256,
      taskSeeds,
      samplesPerTask: 4,
      windowsList: [1, 4],
      trainingWindows: 4,
    });
    const x1 = r.modes.x1!;
    const x4 = r.modes.x4!;
    expect(x1.samples).toBe(160);
    expect(x1.windows).toBe(1);
    // a quarter of tasks fit in one window; success 0.9 on those
    expect(x1.passAt1).toBeGreaterThan(0.15);
    expect(x1.passAt1).toBeLessThan(0.3);
    expect(x1.truncatedRate).toBeCloseTo(0.75, 9);
    expect(x4.passAt1).toBeGreaterThan(0.8);
    expect(x4.truncatedRate).toBe(0);
    expect(x4.meanCompactions).toBeCloseTo(1.5, 9);
    expect(x4.low).toBeLessThan(x4.passAt1);
    expect(x4.high).toBeGreaterThan(x4.passAt1);
    expect(x4.perTask).toHaveLength(40);
  });

  it('round-trips through the validated file format and rejects bad files', async () => {
    const r = await evaluate({
      run: toyRunner,
      system: 'toy',
      policy: 'expert',
      env: 'toy',
      variant: 'default',
      summaryWriter: 'null',
      contextWindow: 256,
      taskSeeds: [1, 2, 3, 4],
      samplesPerTask: 4,
      windowsList: [4],
      trainingWindows: null,
    });
    const dir = mkdtempSync(join(tmpdir(), 'crl-eval-'));
    writeFileSync(join(dir, 'e.json'), JSON.stringify(r));
    expect(readEvalResult(join(dir, 'e.json'))).toEqual(r);
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...r, modes: { x4: { ...r.modes.x4, passAt1: 2 } } }));
    expect(() => readEvalResult(join(dir, 'bad.json'))).toThrow(/modes\.x4\.passAt1/);
  });
});
