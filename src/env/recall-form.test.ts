import { describe, expect, it } from 'vitest';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/random.ts';
import { recallForm, recallValueWords } from './recall-form.ts';
import { getFamily } from './registry.ts';
import { words } from './visible-window.ts';

describe('recall form', () => {
  it("writes distinct keys with values, then probes `k` supervised with that key's value", () => {
    const tokenizer = new WordTokenizer();
    for (let seed = 0; seed < 50; seed++) {
      const pairs = 2 + (seed % 5);
      const parts = recallForm({ rng: new Rng(seed), probes: 8, pairs });
      const head = words(parts[0]!.text);
      expect(head[head.length - 1]).toBe(':');
      const written = new Map<string, string>();
      for (let i = 0; i + 1 < head.length - 1; i += 2) written.set(head[i]!, head[i + 1]!);
      expect(written.size).toBe(pairs);
      expect(parts.slice(1).filter((p) => p.kind === 'target')).toHaveLength(8);
      for (let i = 1; i < parts.length; i += 2) expect(parts[i + 1]!.text).toBe(written.get(parts[i]!.text));
      for (const p of parts) expect(() => tokenizer.encode(p.text)).not.toThrow();
    }
  });

  it('is deterministic per seed', () => {
    expect(recallForm({ rng: new Rng(7), probes: 4 })).toEqual(recallForm({ rng: new Rng(7), probes: 4 }));
    expect(recallForm({ rng: new Rng(7), probes: 4 })).not.toEqual(recallForm({ rng: new Rng(8), probes: 4 }));
  });

  it('writes values as words when the family does, always or by its knobs', () => {
    expect(recallValueWords(getFamily('shell-ledger'), {})).toBe(true);
    expect(recallValueWords(getFamily('kv-ledger'), {})).toBe(false);
    expect(recallValueWords(getFamily('kv-ledger'), { valueWords: true })).toBe(true);
  });
});
