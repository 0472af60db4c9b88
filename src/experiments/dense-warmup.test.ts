import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WordTokenizer } from '../model/tokenizer.ts';
import { createChatLayout, DEFAULT_CHAT_TEMPLATES } from '../rollout/chat-layout.ts';
import { encodeDense } from './dense-warmup.ts';
import { readMetrics } from './metrics-log.ts';
import { runSft, SftConfigSchema } from './sft.ts';

const tokenizer = new WordTokenizer();
const layout = createChatLayout({ tokenizer, templates: DEFAULT_CHAT_TEMPLATES });

describe('dense warm-up', () => {
  it('encodes parts with q_sum before each summary and supervises exactly targets, summaries and their <eot>', () => {
    const ex = encodeDense([
      { kind: 'context', text: 'chunk 1 : set e 14' },
      { kind: 'context', text: ', query e answer' }, { kind: 'target', text: '14' },
      { kind: 'context', text: 'queries e' }, { kind: 'summary', text: 'queries e , set e 14' },
    ], layout, 256);
    const text = tokenizer.decode(Array.from(ex.tokens));
    expect(text).toBe(`<bos> chunk 1 : set e 14 , query e answer 14 queries e ${tokenizer.decode([...layout.summaryPrompt])} queries e , set e 14 <eot>`);
    expect(ex.answerAt.map((t) => tokenizer.decode([ex.tokens[t]!])).join(' ')).toBe('14 queries e , set e 14 <eot>');
    // Positions are increasing and inside the sequence (the loss reads logprobs[t] at them).
    expect(ex.answerAt.every((t, i) => t > 0 && t < ex.tokens.length && (i === 0 || t > ex.answerAt[i - 1]!))).toBe(true);
  });

  it('lays out episode-form parts as the runtime lays out a window (system turn, user/asst/obs turns)', () => {
    const ex = encodeDense([
      { kind: 'instruction', text: 'read all , then answer . queries e' },
      { kind: 'action', text: 'read' }, { kind: 'observation', text: 'chunk 1 : set e 14' },
      { kind: 'summary', text: 'queries e , set e 14' },
    ], layout, 256);
    const want = [...layout.systemTurn, layout.ids.user, ...tokenizer.encode('read all , then answer . queries e'), layout.ids.eot,
      layout.ids.asst, ...tokenizer.encode('read'), layout.ids.eot, layout.ids.obs, ...tokenizer.encode('chunk 1 : set e 14'), layout.ids.eot,
      ...layout.summaryPrompt, ...tokenizer.encode('queries e , set e 14'), layout.ids.eot];
    expect(Array.from(ex.tokens)).toEqual(want);
    expect(ex.answerAt).toEqual(Array.from({ length: 7 }, (_, i) => want.length - 7 + i)); // the summary and its <eot>
  });

  it('leaves out whole parts that would pass maxTokens', () => {
    const parts = [{ kind: 'context', text: 'chunk 1 : set e 14' }, { kind: 'context', text: ', query e answer' }, { kind: 'target', text: '14' }] as const;
    const full = encodeDense(parts, layout, 256);
    const cut = encodeDense(parts, layout, full.tokens.length - 1);
    expect(cut.answerAt).toEqual([]);
    expect(tokenizer.decode(Array.from(cut.tokens))).toBe('<bos> chunk 1 : set e 14 , query e answer');
  });

  it('runs before the episode SFT, lowers its held-out loss, saves iteration 0, and is not redone on resume', async () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'crl-dense-')), 'base');
    const config = SftConfigSchema.parse({
      env: { name: 'kv-ledger', knobs: { queries: 1, keys: 4 } }, model: { preset: 'tiny' }, episodes: 4, epochs: 1, heldOutEpisodes: 0,
      dense: { steps: 60, batch: 8, lr: 1e-2, maxChunks: 2, evalEvery: 15 },
    });
    const lines: string[] = [];
    await runSft({ runDir, config, log: (l) => lines.push(l) });
    const w = JSON.parse(readFileSync(join(runDir, 'dense-warmup.json'), 'utf8'));
    expect(w.curve.map((p: { step: number }) => p.step)).toEqual([0, 15, 30, 45, 60]);
    // From ~ln(vocab) at init: 60 steps must remove a clear share of it (copying the queries).
    expect(w.curve[4].heldOutLoss).toBeLessThan(w.curve[0].heldOutLoss * 0.6);
    expect(lines).toHaveLength(4);
    expect(existsSync(join(runDir, 'checkpoints', 'iter-000000'))).toBe(true);
    expect(readMetrics(join(runDir, 'metrics.jsonl')).map((m) => m.iteration)).toEqual([1]);
    // A longer run in the same directory resumes from epoch 1: no second warm-up.
    await runSft({ runDir, config: { ...config, epochs: 2 }, log: (l) => lines.push(l) });
    expect(lines).toHaveLength(4);
    expect(readMetrics(join(runDir, 'metrics.jsonl')).map((m) => m.iteration)).toEqual([1, 2]);
  }, 120_000);

  it('runs the recall stage first with its own batch size and reports held-out recall', async () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    const config = SftConfigSchema.parse({
      env: { name: 'kv-ledger', knobs: { queries: 1, keys: 4 } }, model: { preset: 'tiny' }, episodes: 2, epochs: 1, heldOutEpisodes: 0,
      dense: { steps: 50, recallSteps: 40, recallBatch: 32, batch: 2, lr: 1e-2, maxChunks: 2, evalEvery: 20 },
    });
    await runSft({ runDir, config, log: () => {} });
    const w = JSON.parse(readFileSync(join(runDir, 'dense-warmup.json'), 'utf8'));
    expect(w.curve.map((p: { step: number }) => p.step)).toEqual([0, 20, 40, 50]);
    const recall = w.curve.map((p: { recallLoss: number }) => p.recallLoss);
    expect(recall.every((l: unknown) => typeof l === 'number')).toBe(true);
    // 40 steps of 32 recall sequences take the recall loss from ~ln(vocab) to at most "some number".
    expect(recall[2]).toBeLessThan(Math.log(64) + 0.2);
    expect(recall[2]).toBeLessThan(recall[0] * 0.8);
    // recallBatch is used: the same 40 steps at 1 sequence per step leave the recall loss higher.
    const one = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    await runSft({ runDir: one, config: { ...config, dense: { ...config.dense, recallBatch: 1 } }, log: () => {} });
    const oneCurve = JSON.parse(readFileSync(join(one, 'dense-warmup.json'), 'utf8')).curve;
    expect(oneCurve[2].recallLoss).toBeGreaterThan(recall[2] + 0.1);
    // Without a recall stage the curve carries no recall fields.
    const plain = SftConfigSchema.parse({ ...config, dense: { steps: 2, batch: 2, evalEvery: 2 } });
    const dir2 = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    await runSft({ runDir: dir2, config: plain, log: () => {} });
    expect(JSON.parse(readFileSync(join(dir2, 'dense-warmup.json'), 'utf8')).curve[1].recallAcc).toBeUndefined();
  }, 120_000);

  it('gives a family without a dense generator the recall stage only', async () => {
    const base = { env: { name: 'hop-search' }, model: { preset: 'tiny' }, episodes: 2, epochs: 1, heldOutEpisodes: 0 };
    const runDir = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    const lines: string[] = [];
    await runSft({ runDir, config: SftConfigSchema.parse({ ...base, dense: { steps: 100, recallSteps: 6, batch: 2, evalEvery: 3 } }), log: (l) => lines.push(l) });
    const w = JSON.parse(readFileSync(join(runDir, 'dense-warmup.json'), 'utf8'));
    expect(w.curve.map((p: { step: number }) => p.step)).toEqual([0, 3, 6]);
    expect(lines[0]).toContain('dense warm-up 3/6');
    // No recall stage: nothing to warm up with, the SFT starts at once.
    const dir2 = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    await runSft({ runDir: dir2, config: SftConfigSchema.parse({ ...base, dense: { steps: 100 } }), log: () => {} });
    expect(existsSync(join(dir2, 'dense-warmup.json'))).toBe(false);
  }, 120_000);
});
