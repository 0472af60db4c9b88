import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../../model/tokenizer/tokenizer.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { Rng } from '../../util/random.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { SftConfigSchema } from './sft-config.ts';
import { runSft } from './sft.ts';
import { expertEpisodes, toSequences } from './sft-data.ts';
import { getFamily } from '../../env/registry.ts';

describe('SFT base policy', () => {
  it('a fast smoke run lowers the training loss (tiny model, chunk-sum, fresh episodes)', async () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'crl-sft-')), 'base');
    const config = SftConfigSchema.parse({
      env: { name: 'chunk-sum' },
      model: { preset: 'tiny' },
      episodes: 8,
      epochs: 6,
      lr: 1e-2,
      warmupSteps: 2,
      batchTokens: 512,
      heldOutEpisodes: 4,
    });
    const { checkpoint } = await runSft({ runDir, config });
    expect(existsSync(checkpoint)).toBe(true);
    const m = readMetrics(join(runDir, 'metrics.jsonl'));
    expect(m.map((l) => l.iteration)).toEqual([1, 2, 3, 4, 5, 6]);
    const first = m[0]!.metrics['sft/loss']!;
    const last = m[5]!.metrics['sft/loss']!;
    // From ~ln(vocab) at init; six epochs must remove a clear share of it, not just noise.
    expect(first).toBeGreaterThan(2);
    expect(last).toBeLessThan(first * 0.8);
    // Held-out accuracy (evaluation seeds, teacher-forced: the share of expert action tokens given
    // p > 0.5) at the last epoch. A model near its initialisation gives p > 0.5 to almost no token:
    // epoch 1's running training accuracy, an upper bound for the untrained model's since it
    // includes epoch 1's learning, is near 0 (measured 0.00). Six epochs reach 0.75 (native and
    // TypeScript kernels alike), so 0.5 leaves a wide margin while failing a model that learned little.
    expect(m[0]!.metrics['sft/token_acc_p50']).toBeLessThan(0.1);
    expect(m[5]!.metrics['heldout/acc_action']).toBeGreaterThan(0.5);
    expect(m[5]!.metrics['heldout/loss']).toBeLessThan(first / 2); // it generalises to unseen seeds
    const data = JSON.parse(readFileSync(join(runDir, 'sft-data.json'), 'utf8'));
    expect(data.episodesSeen).toBe(48); // 8 fresh episodes x 6 epochs
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one

  it('merges exec_j into sum_j without losing or inventing trained tokens, and labels answer values', async () => {
    const source = loadTokenizer('word');
    const tokenizer = source.tokenizer as WordTokenizer;
    const family = getFamily('kv-ledger');
    const { config: rollout, layout } = resolveRolloutConfig({
      input: { contextWindow: 256, maxWindows: 4 },
      tokenizer: source,
    });
    const { episodes: records } = await expertEpisodes({
      family,
      knobs: { queries: 3 },
      rollout,
      layout,
      tokenizer: source,
      lossyP: 0,
      episodes: 6,
      seeds: family.trainSeeds,
      rng: new Rng(3),
      idPrefix: 't',
    });
    const seqs = toSequences({ records, layout });
    const masked = (xs: ArrayLike<number>) => Array.from(xs).reduce((a, b) => a + b, 0);
    const segTokens = records.flatMap((r) => r.segments);
    expect(records.some((r) => r.compactions > 0)).toBe(true);
    expect(seqs.length).toBe(segTokens.length - records.reduce((a, r) => a + r.compactions, 0)); // one merge per compaction
    expect(seqs.reduce((a, s) => a + masked(s.mask), 0)).toBe(segTokens.reduce((a, s) => a + masked(s.lossMask), 0));
    // Every answer-value label decodes to a number or 'none', and each episode's answer is labelled.
    const answers = seqs.flatMap((s) =>
      s.kinds!.flatMap((k, t) => (k === 'answer' ? [tokenizer.decode([s.tokens[t]!])] : [])),
    );
    expect(answers.length).toBeGreaterThanOrEqual(records.length * 3); // 3 queries per task
    for (const w of answers) expect(w).toMatch(/^(\d+|none)$/);
    const summaries = seqs.flatMap((s) => s.kinds!.filter((k) => k === 'summary'));
    expect(summaries.length).toBeGreaterThan(0);
  });

  it('mixes in episodes with extra knobs at the given share (short kv-ledger streams)', async () => {
    const source = loadTokenizer('word');
    const family = getFamily('kv-ledger');
    const { config: rollout, layout } = resolveRolloutConfig({
      input: { contextWindow: 256, maxWindows: 4 },
      tokenizer: source,
    });
    const common = {
      family,
      knobs: { minChunks: 11, chunks: 11 }, // every episode compacts unless mixed
      rollout,
      layout,
      tokenizer: source,
      lossyP: 0,
      episodes: 40,
      seeds: family.trainSeeds,
      idPrefix: 'm',
    };
    const { episodes: all } = await expertEpisodes({
      ...common,
      mix: [{ share: 1, knobs: { minChunks: 1, chunks: 1 } }],
      rng: new Rng(4),
    });
    expect(all.every((r) => r.compactions === 0 && r.reward === 1)).toBe(true); // 1 chunk fits one window
    const { episodes: half } = await expertEpisodes({
      ...common,
      mix: [{ share: 0.5, knobs: { minChunks: 1, chunks: 1 } }],
      rng: new Rng(4),
    });
    const short = half.filter((r) => r.compactions === 0).length;
    expect(short).toBeGreaterThanOrEqual(10); // Binomial(40, 0.5): outside [10, 30] has p < 0.002
    expect(short).toBeLessThanOrEqual(30);
    expect(() =>
      SftConfigSchema.parse({
        mix: {
          'kv-ledger': [
            { share: 0.7, knobs: {} },
            { share: 0.7, knobs: {} },
          ],
        },
      }),
    ).toThrow(/at most 1/);
  });

  it('lossyGoalP sets how often the summaries drop the question, separately from the facts (hop-search)', async () => {
    const source = loadTokenizer('word');
    const tokenizer = source.tokenizer as WordTokenizer;
    const family = getFamily('hop-search');
    const { config: rollout, layout } = resolveRolloutConfig({
      input: { contextWindow: 256, maxWindows: 4 },
      tokenizer: source,
    });
    const common = {
      family,
      knobs: { minHops: 5, hops: 5 }, // every episode compacts (3 windows)
      rollout,
      layout,
      tokenizer: source,
      lossyP: 0,
      episodes: 12,
      seeds: family.trainSeeds,
      idPrefix: 'g',
    };
    const summaries = (records: Awaited<ReturnType<typeof expertEpisodes>>['episodes']) =>
      records.flatMap((r) =>
        r.segments
          .filter((s) => s.kind === 'summary')
          .map((s) => tokenizer.decode(s.tokens.filter((_, t) => s.lossMask[t] === 1))),
      );
    const kept = summaries((await expertEpisodes({ ...common, rng: new Rng(5) })).episodes);
    expect(kept.length).toBeGreaterThan(0);
    for (const text of kept) expect(text).toMatch(/^question /); // lossy(0): the question always kept
    // The question dropped every time; an episode then ends at its first summary (the expert answers `none`).
    const { episodes: lost } = await expertEpisodes({ ...common, lossyGoalP: 1, rng: new Rng(5) });
    const lostTexts = summaries(lost);
    expect(lostTexts.length).toBe(lost.length);
    for (const text of lostTexts) expect(text).not.toMatch(/question/);
    expect(lost.every((r) => r.reward === 0)).toBe(true);
    expect(SftConfigSchema.parse({}).lossyGoalP).toBeUndefined(); // unset: lossyP / 2 inside the writer
    expect(() => SftConfigSchema.parse({ lossyGoalP: 1.5 })).toThrow();
  });
});
