import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { Rng } from '../../util/random.ts';
import type { ChatMessage } from '../../contracts/index.ts';
import { readWindow } from '../visible-window.ts';
import { shellLedgerExpert, readShellLedger } from './expert.ts';
import { shellLedger, shellLedgerKnobs } from './index.ts';

const knobs = shellLedgerKnobs.parse({});
const dense = (seed: number, summaryShare = 0.5) =>
  shellLedger.sft!.dense!({ rng: new Rng(seed), knobs, maxChunks: 6, probes: 8, summaryShare });

describe('shell-ledger dense warm-up text', () => {
  it('is deterministic per seed and encodes in Qwen3 tokens', () => {
    const tok = loadTokenizer('qwen3').tokenizer;
    for (let seed = 0; seed < 30; seed++) {
      const a = dense(seed);
      expect(a).toEqual(dense(seed));
      for (const p of a) expect(tok.decode(tok.encode(p.text))).toBe(p.text);
    }
  });

  it('episode form: the summary is what the expert writes on that window', () => {
    for (let seed = 0; seed < 100; seed++) {
      const parts = dense(seed, 1);
      expect(parts[0]!.kind).toBe('instruction');
      const messages: ChatMessage[] = [{ role: 'user', content: parts[0]!.text }];
      for (const p of parts.slice(1, -1))
        messages.push({ role: p.kind === 'action' ? 'assistant' : 'observation', content: p.text });
      const last = parts[parts.length - 1]!;
      expect(last.kind).toBe('summary');
      expect(last.text).toBe(shellLedgerExpert([...messages, { role: 'user', content: 'summarize' }], new Rng(0)));
    }
  });

  it('lookup form: every target is the value the expert reads from the stream', () => {
    for (let seed = 0; seed < 100; seed++) {
      const parts = dense(seed, 0);
      expect(parts[0]!.kind).toBe('context');
      const stream = parts[0]!.text;
      for (let i = 1; i < parts.length; i += 2) {
        const [ask, target] = [parts[i]!, parts[i + 1]!];
        const key = target.kind === 'summary' ? ask.text.split(' ')[1]! : ask.text.split(' ')[3]!;
        // Replay: a window whose instruction names the key, then the stream as one cat output.
        const s = readShellLedger(
          readWindow([
            { role: 'user', content: `write the final setting of ${key}` },
            { role: 'assistant', content: 'cat log/part-1.txt' },
            { role: 'observation', content: stream },
          ]),
        );
        const value = s.value ?? 'none';
        if (target.kind === 'summary') expect(target.text).toBe(`${ask.text} , ${key} = ${value}`);
        else expect(target.text).toBe(`${key} ${value}`);
      }
    }
  });
});
