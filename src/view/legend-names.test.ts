import { describe, expect, it } from 'vitest';
import { legendNames } from './legend-names.ts';

const run = (id: number, system: string | null, seed: number | null, group = 'reproduce-quick-20261201T120000') => ({
  id,
  label: `${group}/systems/${system ?? 'x'}--kv-ledger--s${seed ?? 0}`,
  group,
  system,
  seed,
});

describe('legend names', () => {
  it('names a pipeline’s runs by system and seed, never by the directory they share', () => {
    const names = legendNames([run(0, 'base', 0), run(1, 'compaction-rl', 0), run(2, 'compaction-rl', 1)]);
    expect([...names.values()]).toEqual(['base · seed 0', 'compaction-rl · seed 0', 'compaction-rl · seed 1']);
  });

  it('adds the given directory where two runs share a system and seed, and the id where that is not enough', () => {
    const names = legendNames([
      run(0, 'compaction-rl', 0, 'pipe-a'),
      run(1, 'compaction-rl', 0, 'pipe-b'),
      run(2, 'compaction-rl', 0, 'pipe-b'),
      run(3, 'no-compaction', 0, 'pipe-b'),
    ]);
    expect([...names.values()]).toEqual([
      'compaction-rl · seed 0 (pipe-a)',
      'compaction-rl · seed 0 (pipe-b) #1',
      'compaction-rl · seed 0 (pipe-b) #2',
      'no-compaction · seed 0',
    ]);
  });

  it('falls back to the label without a config, and to the system without a seed', () => {
    const names = legendNames([run(0, null, null), { ...run(1, 'sft', null), label: 'x' }]);
    expect([...names.values()]).toEqual([run(0, null, null).label, 'sft']);
  });
});
