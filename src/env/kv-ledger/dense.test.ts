import { describe, expect, it } from 'vitest';
import { checkDenseDeterministicAndClosed } from '../../experiments/testing/dense-laws.ts';
import { Rng } from '../../util/random.ts';
import { words } from '../visible-window.ts';
import { kvLedgerExpert, kvLedgerNeeded } from './expert.ts';
import type { ChatMessage } from '../../contracts/index.ts';
import { kvLedger, kvLedgerKnobs } from './index.ts';

const knobs = kvLedgerKnobs.parse({ queries: 1, keys: 4 });
const dense = (seed: number, summaryShare = 0.5) =>
  kvLedger.sft!.dense!({ rng: new Rng(seed), knobs, maxChunks: 4, probes: 8, summaryShare });

describe('kv-ledger dense warm-up text', () => {
  it('is deterministic per seed and uses only vocabulary words', () => checkDenseDeterministicAndClosed(dense));

  it('lookup form: every supervised part is what the oracle and the expert would write for the stream', () => {
    for (let seed = 0; seed < 200; seed++) {
      const parts = dense(seed, 0);
      const stream = words(parts[0]!.text);
      expect(parts[0]!.kind).toBe('context');
      for (let i = 1; i < parts.length; i += 2) {
        const [ask, target] = [parts[i]!, parts[i + 1]!];
        if (target.kind === 'summary') {
          // The oracle summary of a window holding the queries and then the stream (kvLedgerNeeded).
          const queries = words(ask.text);
          const c = kvLedgerNeeded({
            head: queries,
            steps: [{ action: ['read'], observation: stream }],
            summaryRequest: true,
          });
          expect(target.text).toBe([...c.goal, ...c.facts].join(' , '));
        } else {
          const key = words(ask.text)[2]!;
          const c = kvLedgerNeeded({
            head: ['queries', key],
            steps: [{ action: ['read'], observation: stream }],
            summaryRequest: true,
          });
          const fact = c.facts.find((f) => f.startsWith(`set ${key} `));
          expect(target.text).toBe(fact ? fact.split(' ')[2] : 'none');
        }
      }
    }
  });

  it('episode form: every summary is the oracle summary of the chat so far (kvLedgerNeeded on that window)', () => {
    let checked = 0;
    for (let seed = 0; seed < 100; seed++) {
      const parts = dense(seed, 1);
      expect(parts[0]!.kind).toBe('instruction');
      const head = words(parts[0]!.text);
      const steps: { action: string[]; observation: string[] | null }[] = [];
      for (let i = 1; i < parts.length; i++) {
        const p = parts[i]!;
        if (p.kind === 'action') steps.push({ action: words(p.text), observation: words(parts[++i]!.text) });
        else {
          expect(p.kind).toBe('summary');
          const c = kvLedgerNeeded({ head, steps, summaryRequest: true });
          expect(p.text).toBe([...c.goal, ...c.facts].join(' , '));
          checked++;
        }
      }
    }
    expect(checked).toBe(100); // one summary request, closing each sequence
  });

  it('summaryShare picks the form: 0 only the lookup form, 1 only the episode form', () => {
    for (let seed = 0; seed < 20; seed++) {
      expect(dense(seed, 0)[0]!.kind).toBe('context');
      expect(dense(seed, 1)[0]!.kind).toBe('instruction');
      expect(dense(seed, 1).filter((p) => p.kind === 'target' || p.kind === 'context')).toHaveLength(0);
    }
  });

  it("answerShare: an episode form ends with the expert's answer on the chat so far; 0 leaves the forms as they were", () => {
    const answering = (seed: number, answerShare: number) =>
      kvLedger.sft!.dense!({ rng: new Rng(seed), knobs, maxChunks: 4, probes: 8, summaryShare: 1, answerShare });
    for (let seed = 0; seed < 50; seed++) {
      expect(answering(seed, 0)).toEqual(dense(seed, 1));
      const parts = answering(seed, 1);
      const last = parts[parts.length - 1]!;
      expect(last.kind).toBe('reply');
      expect(parts[parts.length - 2]).toEqual({ kind: 'observation', text: 'end' });
      const messages: ChatMessage[] = parts.slice(0, -1).map((p) => ({
        role: p.kind === 'instruction' ? 'user' : p.kind === 'action' ? 'assistant' : 'observation',
        content: p.text,
      }));
      expect(last.text).toBe(kvLedgerExpert(messages, new Rng(0)));
      expect(last.text).toMatch(/^answer /);
    }
  });
});
