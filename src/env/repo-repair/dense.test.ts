import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../contracts/index.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { DEFAULT_CHAT_TEMPLATES } from '../../rollout/chat-layout.ts';
import { Rng } from '../../util/random.ts';
import { catN, grepDefs, RESUME_PREFIX } from './dense.ts';
import { repoRepairExpert } from './expert.ts';
import { repoRepair, repoRepairKnobs } from './index.ts';

const knobs = repoRepairKnobs.parse({});
const dense = (seed: number, summaryShare = 0.5) =>
  repoRepair.sft!.dense!({ rng: new Rng(seed), knobs, maxChunks: 8, probes: 8, summaryShare });

/** The window a sequence's parts make, as chat messages (the instruction part is u_resume). */
function replay(parts: ReturnType<typeof dense>, check: (messages: ChatMessage[], want: string) => void): void {
  const messages: ChatMessage[] = [];
  for (const p of parts) {
    if (p.kind === 'instruction') messages.push({ role: 'user', content: p.text });
    else if (p.kind === 'action') messages.push({ role: 'assistant', content: p.text });
    else if (p.kind === 'observation') messages.push({ role: 'observation', content: p.text });
    else if (p.kind === 'reply') {
      check(messages, p.text);
      messages.push({ role: 'assistant', content: p.text });
    } else if (p.kind === 'summary') check([...messages, { role: 'user', content: 'summarize' }], p.text);
    else throw new Error(`unexpected part ${p.kind}`);
  }
}

describe('repo-repair dense warm-up text', () => {
  it('opens with the runtime’s own resume prefix, is deterministic per seed and encodes in Qwen3 tokens', () => {
    expect(RESUME_PREFIX).toBe(DEFAULT_CHAT_TEMPLATES.resumePrefix);
    const tok = loadTokenizer('qwen3').tokenizer;
    for (let seed = 0; seed < 30; seed++) {
      const a = dense(seed);
      expect(a).toEqual(dense(seed));
      expect(a[0]!.text.startsWith(`${RESUME_PREFIX} goal tests/test_`)).toBe(true);
      for (const p of a) expect(tok.decode(tok.encode(p.text))).toBe(p.text);
    }
  });

  it('every supervised turn is what the expert does on that window: the grep, the read, the edit, submit and the summary', () => {
    let edits = 0;
    let summaries = 0;
    for (let seed = 0; seed < 300; seed++) {
      const parts = dense(seed);
      replay(parts, (messages, want) => expect(repoRepairExpert(messages, new Rng(0))).toBe(want));
      if (parts.some((p) => p.kind === 'reply' && p.text.startsWith('sed -i'))) edits++;
      if (parts.some((p) => p.kind === 'summary')) summaries++;
    }
    // Both forms occur (summaryShare 0.5 where a window greps or reads).
    expect(edits).toBeGreaterThan(100);
    expect(summaries).toBeGreaterThan(50);
  });

  it('writes the reads and the grep exactly as cat -n | sed -n and grep -n print them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-dense-cat-'));
    try {
      const lines = [
        'from .base import diff',
        '',
        'def scale_fee(a, b):',
        '    return a * 3 + b',
        '',
        'def f(a, b):',
        '    return a',
      ];
      const file = join(dir, 'm.py');
      writeFileSync(file, lines.join('\n') + '\n');
      for (const first of [1, 3, 6, 7]) {
        const real = execFileSync('bash', ['-c', `cat -n "$0" | sed -n ${first},+1p`, file], { encoding: 'utf8' });
        expect(catN(lines, first, 2)).toBe(`${real}[exit 0]`);
      }
      const listed = execFileSync('bash', ['-c', `grep -n 'def scale_fee' "$0"`, file], { encoding: 'utf8' });
      expect(grepDefs(lines, 'scale_fee')).toBe(`${listed}[exit 0]`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
