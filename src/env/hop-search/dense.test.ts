import { describe, expect, it } from 'vitest';
import { checkDenseDeterministicAndClosed } from '../testing/dense-laws.ts';
import { Rng } from '../../util/random.ts';
import { words, type VisibleStep } from '../visible-window.ts';
import { hopSearchNeeded } from './expert.ts';
import { hopSearch, hopSearchKnobs } from './index.ts';

const knobs = hopSearchKnobs.parse({});
const dense = (seed: number, summaryShare = 0.5) => hopSearch.dense!({ rng: new Rng(seed), knobs, maxChunks: 8, probes: 8, summaryShare });

/** `doc 17 : boss of c is k . pet of k is m` → facts keyed `boss c`. */
function docFacts(text: string): Map<string, string> {
  const ws = words(text);
  const out = new Map<string, string>();
  for (let i = 0; i + 4 < ws.length; i++) if (ws[i + 1] === 'of' && ws[i + 3] === 'is') out.set(`${ws[i]} ${ws[i + 2]}`, ws[i + 4]!);
  return out;
}

describe('hop-search dense lookups', () => {
  it('is deterministic per seed and uses only vocabulary words', () => checkDenseDeterministicAndClosed(dense));

  it('lookup form: every reply is the value of the fact keyed by the relation and the subject asked', () => {
    let twoKey = 0;
    for (let seed = 0; seed < 200; seed++) {
      const parts = dense(seed, 0);
      const facts = new Map<string, string>();
      for (let i = 1; i < parts.length; i++) {
        const p = parts[i]!;
        if (p.kind === 'observation' && p.text.startsWith('doc ')) for (const [k, v] of docFacts(p.text)) facts.set(k, v);
        if (p.kind !== 'reply') continue;
        const [, rel, , subject] = words(parts[i - 1]!.text); // question R of E
        expect(p.text).toBe(`answer ${facts.get(`${rel} ${subject}`)}`);
        // A one-key lookup would be ambiguous: another fact shares the subject or the relation.
        if ([...facts.keys()].some((k) => k !== `${rel} ${subject}` && (k.startsWith(`${rel} `) || k.endsWith(` ${subject}`)))) twoKey++;
      }
    }
    expect(twoKey).toBeGreaterThan(1200); // 1396 of the 1600 probes
  });

  it('chain form: the summary is the oracle summary of the window (hopSearchNeeded)', () => {
    let resolved = 0;
    for (let seed = 0; seed < 200; seed++) {
      const parts = dense(seed, 1);
      expect(parts[0]!.kind).toBe('instruction');
      const steps: VisibleStep[] = [];
      for (let i = 1; i < parts.length - 1; i += 2) steps.push({ action: words(parts[i]!.text), observation: words(parts[i + 1]!.text) });
      const last = parts[parts.length - 1]!;
      expect(last.kind).toBe('summary');
      const c = hopSearchNeeded({ head: words(parts[0]!.text), steps, summaryRequest: true });
      expect(last.text).toBe([...c.goal, ...c.facts].join(' , '));
      if (c.facts.length > 0) resolved++;
    }
    expect(resolved).toBeGreaterThan(100); // the documents in view resolve at least one hop most of the time
  });
});
