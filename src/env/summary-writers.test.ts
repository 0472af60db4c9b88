import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Rng } from '../util/random.ts';
import type { ChatMessage } from '../contracts/index.ts';
import { dropClauses, renderSummary } from './summary-writers.ts';
import type { SummaryContent } from './summary-content.ts';
import { BUILTIN_FAMILIES } from './builtin.ts';
import { playDirect } from './testing/direct-episode.ts';
import { readWindow } from './visible-window.ts';

const Q_SUM: ChatMessage = { role: 'user', content: 'summarize the task goal and the facts needed so far' };

describe('summary writers', () => {
  const content: SummaryContent = { goal: ['queries a b'], meta: ['step 5'], facts: ['set a 1', 'set b 2', 'end'] };

  it('lossy(0) keeps everything and lossy(1) keeps only meta and (sometimes) the goal', () => {
    const rng = new Rng(1);
    expect(renderSummary(dropClauses(content, 0, rng))).toBe(renderSummary(content));
    let goalKept = 0;
    for (let i = 0; i < 400; i++) {
      const d = dropClauses(content, 1, rng);
      expect(d.facts).toEqual([]);
      expect(d.meta).toEqual(['step 5']);
      goalKept += d.goal.length;
    }
    expect(goalKept / 400).toBeGreaterThan(0.4); // goal dropped with p / 2 = 0.5
    expect(goalKept / 400).toBeLessThan(0.6);
  });

  it('drops each fact with probability p', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.05, max: 0.95, noNaN: true }), fc.integer({ min: 0, max: 1000 }), (p, seed) => {
        const rng = new Rng(seed);
        let kept = 0;
        const n = 2000;
        for (let i = 0; i < n; i++) kept += dropClauses(content, p, rng).facts.length;
        expect(Math.abs(kept / (3 * n) - (1 - p))).toBeLessThan(0.05);
      }),
      { numRuns: 10 },
    );
  });

  it('drops the goal with its own probability when given, without changing the fact draws', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0.05, max: 0.95, noNaN: true }),
        fc.integer({ min: 0, max: 1000 }),
        (p, g, seed) => {
          const a = new Rng(seed);
          const b = new Rng(seed);
          let goalKept = 0;
          const n = 2000;
          for (let i = 0; i < n; i++) {
            const withGoalP = dropClauses(content, p, a, g);
            goalKept += withGoalP.goal.length;
            // The same rng draws: the facts kept do not depend on the goal probability.
            expect(withGoalP.facts).toEqual(dropClauses(content, p, b).facts);
          }
          expect(Math.abs(goalKept / n - (1 - g))).toBeLessThan(0.05);
        },
      ),
      { numRuns: 10 },
    );
    expect(renderSummary(dropClauses(content, 0.3, new Rng(9)))).toBe(
      renderSummary(dropClauses(content, 0.3, new Rng(9), 0.15)),
    );
  });

  it("every family's oracle equals its lossy(0) and its expert's own summary, and lossy(p) rejects p outside [0, 1]", () => {
    for (const f of BUILTIN_FAMILIES) {
      expect(() => f.summaryWriters.lossy(1.5)).toThrow(/0 <= p <= 1/);
      expect(() => f.summaryWriters.lossy(0.2, -0.1)).toThrow(/goal drop probability/);
      for (let seed = 0; seed < 10; seed++) {
        const ep = playDirect({ env: f.create({}), seed, policy: f.expert });
        const cutAt = 2 + 2 * Math.floor(ep.actions.length / 2); // a mid-episode window
        const request = [...ep.messages.slice(0, cutAt), Q_SUM];
        expect(readWindow(request).summaryRequest).toBe(true);
        const oracle = f.summaryWriters.oracle(request, new Rng(0));
        expect(oracle.length).toBeGreaterThan(0);
        expect(f.summaryWriters.lossy(0)(request, new Rng(3))).toBe(oracle);
        expect(f.expert(request, new Rng(0))).toBe(oracle);
      }
    }
  });
});
