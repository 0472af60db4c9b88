import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../contracts/index.ts';
import { checkDenseDeterministicAndClosed } from '../../experiments/testing/dense-laws.ts';
import { Rng } from '../../util/random.ts';
import type { DensePart } from '../family.ts';
import { hopSearch, hopSearchKnobs } from './index.ts';

const knobs = hopSearchKnobs.parse({});
const dense = (seed: number, summaryShare = 0.5): DensePart[] =>
  hopSearch.sft!.dense!({ rng: new Rng(seed), knobs, maxChunks: 8, probes: 8, summaryShare });
const ROLE: Partial<Record<DensePart['kind'], ChatMessage['role']>> = {
  instruction: 'user',
  action: 'assistant',
  reply: 'assistant',
  observation: 'observation',
};

/**
 * Replays the parts as chat windows (each `instruction` opens one: an episode's first window or the
 * window rebuilt from a summary) and checks every supervised part against the expert on exactly the
 * text before it: replies are its action, summaries its oracle summary (after a summary request).
 */
function checkAgainstExpert(parts: readonly DensePart[]): { replies: number; summaries: number; answers: number } {
  const counts = { replies: 0, summaries: 0, answers: 0 };
  let window: ChatMessage[] = [];
  parts.forEach((p, i) => {
    if (p.kind === 'instruction') window = [{ role: 'system', content: 'you are an agent' }];
    if (p.kind === 'reply') {
      expect(p.words).toBeUndefined(); // the whole turn is determined by the visible text
      expect(p.text).toBe(hopSearch.expert(window, new Rng(0)));
      counts.replies++;
      if (p.text.startsWith('answer ')) {
        expect(parts[i + 1]).toEqual({ kind: 'observation', text: 'correct' });
        counts.answers++;
      }
    }
    if (p.kind === 'summary') {
      expect(p.text).toBe(
        hopSearch.expert(
          [...window, { role: 'user', content: 'summarize the task goal and the facts needed so far' }],
          new Rng(0),
        ),
      );
      expect(p.text).toBe(
        hopSearch.summaryWriters.oracle([...window, { role: 'user', content: 'summarize' }], new Rng(0)),
      );
      expect(parts[i + 1]).toEqual({ kind: 'instruction', text: p.text }); // the rebuilt window's head
      counts.summaries++;
      return;
    }
    const role = ROLE[p.kind];
    if (!role) throw new Error(`unexpected part kind ${p.kind}`);
    window.push({ role, content: p.text });
  });
  return counts;
}

describe('hop-search dense episodes', () => {
  it('is deterministic per seed and uses only vocabulary words', () => checkDenseDeterministicAndClosed(dense));

  it('every reply is the expert action and every summary the oracle summary of the window before it', () => {
    const total = { replies: 0, summaries: 0, answers: 0, sequences: 0 };
    for (let seed = 0; seed < 200; seed++) {
      const parts = dense(seed);
      expect(parts[0]!.kind).toBe('instruction');
      const c = checkAgainstExpert(parts);
      total.replies += c.replies;
      total.summaries += c.summaries;
      total.answers += c.answers;
      total.sequences++;
    }
    // Many decisions per sequence (an episode gives ~9), and about summaryShare of the episodes compacted.
    expect(total.replies / total.sequences).toBeGreaterThan(14);
    expect(total.summaries / total.answers).toBeGreaterThan(0.35);
    expect(total.summaries / total.answers).toBeLessThan(0.65);
  });

  it('summaryShare 0 writes no summaries; 1 compacts every episode once', () => {
    for (let seed = 0; seed < 50; seed++) {
      expect(dense(seed, 0).some((p) => p.kind === 'summary')).toBe(false);
      const all = dense(seed, 1);
      const c = checkAgainstExpert(all);
      expect(c.summaries).toBe(c.answers);
    }
  });
});
