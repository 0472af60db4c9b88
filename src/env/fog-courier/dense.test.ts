import { describe, expect, it } from 'vitest';
import { checkDenseDeterministicAndClosed } from '../testing/dense-laws.ts';
import { Rng } from '../../util/random.ts';
import { words } from '../visible-window.ts';
import { fogCourier, fogCourierKnobs } from './index.ts';

const knobs = fogCourierKnobs.parse({});
const dense = (seed: number) => fogCourier.dense!({ rng: new Rng(seed), knobs, maxChunks: 8, probes: 8, summaryShare: 0.5 });

describe('fog-courier dense decision probes', () => {
  it('is deterministic per seed and uses only vocabulary words', () => checkDenseDeterministicAndClosed(dense));

  it('every supervised reply is the expert decision for the room in view and the carried item', () => {
    const seen = { take: 0, drop: 0, go: 0, recover: 0 };
    for (let seed = 0; seed < 300; seed++) {
      const parts = dense(seed);
      const head = words(parts[0]!.text); // deliver item X to room R , then done . step 0 : room …
      expect(parts[0]!.kind).toBe('instruction');
      const [item, target] = [head[2]!, head[5]!];
      let view: string[] = head.slice(head.indexOf('room', 6));
      let carrying = false;
      let last = '';
      for (const p of parts.slice(1)) {
        if (p.kind === 'observation') {
          const ws = words(p.text).slice(3); // after `step n :`
          if (ws[0] === 'room') view = ws;
          last = ws.join(' ');
          continue;
        }
        const items = view.includes('items') ? view.slice(view.indexOf('items') + 1) : [];
        if (p.kind === 'action') { // the injected mistake: a wrong take, read only
          expect(p.text).toBe(`take ${item}`);
          expect(carrying || !items.includes(item)).toBe(true);
          seen.recover++;
          continue;
        }
        expect(p.kind).toBe('reply');
        if (p.kind !== 'reply') continue;
        const [verb] = words(p.text);
        if (verb === 'take') {
          expect([p.text, carrying, items.includes(item)]).toEqual([`take ${item}`, false, true]);
          expect(p.words).toBeUndefined(); // supervised whole
          carrying = true;
          seen.take++;
        } else if (verb === 'drop') {
          expect([p.text, carrying, view[1]]).toEqual([`drop ${item}`, true, target]);
          carrying = false;
          seen.drop++;
        } else if (verb === 'done') {
          expect(last).toBe('ok');
        } else {
          expect(verb).toBe('go');
          expect(p.words).toBe(1); // the direction is not the probe's to know
          // Not a decisive room: the goal item is not here to take, or this is not the target.
          if (last.startsWith('room')) expect(carrying ? view[1] !== target : !items.includes(item)).toBe(true);
          expect(view.slice(view.indexOf('exits') + 1)).toContain(words(p.text)[1]);
          seen.go++;
        }
      }
    }
    // All decisions occur often (the point of the form: episodes have one take and one drop each).
    expect(seen.take).toBeGreaterThan(200);
    expect(seen.drop).toBeGreaterThan(100);
    expect(seen.recover).toBeGreaterThan(50);
  });
});
