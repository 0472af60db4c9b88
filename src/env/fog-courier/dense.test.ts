import { describe, expect, it } from 'vitest';
import { checkDenseDeterministicAndClosed } from '../../experiments/testing/dense-laws.ts';
import { Rng } from '../../util/random.ts';
import { words } from '../visible-window.ts';
import { fogCourier, fogCourierKnobs } from './index.ts';
import type { DensePart } from '../family.ts';

const knobs = fogCourierKnobs.parse({});
const dense = (seed: number, summaryShare = 0.5): DensePart[] =>
  fogCourier.sft!.dense!({ rng: new Rng(seed), knobs, maxChunks: 8, probes: 16, summaryShare });

/** Signposts of the instruction: `path 12 east , 17 north , …` -> room id -> direction. */
function signposts(instruction: string): Map<string, string> {
  const ws = words(instruction);
  const out = new Map<string, string>();
  for (let i = ws.indexOf('path') + 1; i < ws.indexOf('room', 6); i += 3) out.set(ws[i]!, ws[i + 1]!);
  return out;
}

describe('fog-courier dense forms', () => {
  it('is deterministic per seed and uses only vocabulary words', () =>
    checkDenseDeterministicAndClosed((s) => dense(s)));

  it('lookup form: every supervised reply follows the signpost of the room in view, or takes / drops / leaves a side room', () => {
    const seen = { sign: 0, take: 0, back: 0, drop: 0 };
    for (let seed = 0; seed < 200; seed++) {
      const parts = dense(seed, 0);
      const head = words(parts[0]!.text); // deliver item X to room R , then done . path … , R drop . room …
      const [item, target] = [head[2]!, head[5]!];
      const signs = signposts(parts[0]!.text);
      let view: string[] = [];
      let came = '';
      let last = '';
      for (const p of parts.slice(1)) {
        if (p.kind === 'action') came = words(p.text)[1] ?? '';
        if (p.kind === 'observation') {
          last = p.text;
          if (last.startsWith('room')) view = words(last);
        }
        if (p.kind !== 'reply') continue;
        const room = view[1]!;
        const items = view.includes('items') ? view.slice(view.indexOf('items') + 1) : [];
        expect(signs.get(target)).toBe('drop');
        if (p.text.startsWith('take')) {
          expect([p.text, items.includes(item)]).toEqual([`take ${item}`, true]);
          seen.take++;
        } else if (p.text.startsWith('drop')) {
          expect([p.text, room]).toEqual([`drop ${item}`, target]);
          seen.drop++;
        } else if (p.text === 'done') expect(last).toBe('ok');
        else if (signs.has(room)) {
          expect(p.text).toBe(`go ${signs.get(room)}`);
          seen.sign++;
        } else {
          // A side room is a dead end: out by the way back.
          const back = { north: 'south', south: 'north', east: 'west', west: 'east' }[came];
          expect(p.text).toBe(`go ${back}`);
          seen.back++;
        }
        expect(p.kind === 'reply' && p.words).toBeFalsy(); // supervised whole
      }
    }
    expect(seen.sign).toBeGreaterThan(1200);
    expect(seen.take).toBeGreaterThan(100);
    expect(seen.back).toBeGreaterThan(300);
    expect(seen.drop).toBe(200);
  });

  it('walk form: a real episode cut by the oracle summary, which keeps the goal and the signposts ahead', () => {
    let summaries = 0;
    for (let seed = 0; seed < 200; seed++) {
      const parts = dense(seed, 1);
      const last = parts[parts.length - 1]!;
      if (last.kind !== 'summary') continue; // the budget ran out after wrong turns
      summaries++;
      const signs = [...signposts(parts[0]!.text)];
      const ws = words(last.text);
      expect(ws.slice(0, 6).join(' ')).toBe(words(parts[0]!.text).slice(0, 6).join(' '));
      // The kept signposts are a suffix of the route's, in order.
      const kept = last.text
        .split(' , ')
        .slice(1)
        .filter((c) => !c.startsWith('drop'))
        .map((c) => words(c));
      const suffix = signs.slice(signs.length - kept.length).map(([id, d]) => [id, d]);
      expect(kept).toEqual(suffix);
    }
    expect(summaries).toBeGreaterThan(120);
  });
});
