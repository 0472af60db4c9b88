/**
 * The dense warm-up: its encoding, its replay and the recall gate, end to end on small runs.
 * One file over 300 lines on purpose: the cases share the tokenizer and chat-layout fixtures, and
 * the gate's checks only make sense beside the encoding they gate.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../../model/tokenizer/tokenizer.ts';
import { createChatLayout, DEFAULT_CHAT_TEMPLATES } from '../../rollout/chat-layout.ts';
import { denseReplay, DenseWarmupSchema, RECALL_BLOCK } from './dense-warmup.ts';
import { encodeDense } from './dense-encoding.ts';
import { getFamily } from '../../env/registry.ts';
import { Rng } from '../../util/random.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { SftConfigSchema } from './sft-config.ts';
import { runSft } from './sft.ts';

const source = loadTokenizer('word');

const tokenizer = source.tokenizer as WordTokenizer;
const layout = createChatLayout({ tokenizer: source, templates: DEFAULT_CHAT_TEMPLATES });

describe('dense warm-up', () => {
  it('encodes parts with q_sum before each summary and supervises exactly targets, summaries and their <eot>', () => {
    const ex = encodeDense(
      [
        { kind: 'context', text: 'chunk 1 : set e 14' },
        { kind: 'context', text: ', query e answer' },
        { kind: 'target', text: '14' },
        { kind: 'context', text: 'queries e' },
        { kind: 'summary', text: 'queries e , set e 14' },
      ],
      layout,
      256,
    );
    const text = tokenizer.decode(Array.from(ex.tokens));
    expect(text).toBe(
      `<bos> chunk 1 : set e 14 , query e answer 14 queries e ${tokenizer.decode([...layout.summaryPrompt])} queries e , set e 14 <eot>`,
    );
    expect(ex.answerAt.map((t) => tokenizer.decode([ex.tokens[t]!])).join(' ')).toBe('14 queries e , set e 14 <eot>');
    // Positions are increasing and inside the sequence (the loss reads logprobs[t] at them).
    expect(ex.answerAt.every((t, i) => t > 0 && t < ex.tokens.length && (i === 0 || t > ex.answerAt[i - 1]!))).toBe(
      true,
    );
  });

  it('lays out episode-form parts as the runtime lays out a window (system turn, user/asst/obs turns)', () => {
    const ex = encodeDense(
      [
        { kind: 'instruction', text: 'read all , then answer . queries e' },
        { kind: 'action', text: 'read' },
        { kind: 'observation', text: 'chunk 1 : set e 14' },
        { kind: 'summary', text: 'queries e , set e 14' },
      ],
      layout,
      256,
    );
    const want = [
      ...layout.systemTurn,
      tokenizer.specialId('<user>'),
      ...tokenizer.encode('read all , then answer . queries e'),
      tokenizer.specialId('<eot>'),
      tokenizer.specialId('<asst>'),
      ...tokenizer.encode('read'),
      tokenizer.specialId('<eot>'),
      tokenizer.specialId('<obs>'),
      ...tokenizer.encode('chunk 1 : set e 14'),
      tokenizer.specialId('<eot>'),
      ...layout.summaryPrompt,
      ...tokenizer.encode('queries e , set e 14'),
      tokenizer.specialId('<eot>'),
    ];
    expect(Array.from(ex.tokens)).toEqual(want);
    expect(ex.answerAt).toEqual(Array.from({ length: 7 }, (_, i) => want.length - 7 + i)); // the summary and its <eot>
  });

  it('reply parts are assistant turns, supervised whole with <eot>, or only their first `words` words', () => {
    const ex = encodeDense(
      [
        { kind: 'instruction', text: 'deliver item c to room 5 , then done .' },
        { kind: 'reply', text: 'go north', words: 1 },
        { kind: 'observation', text: 'step 1 : room 5 exits south items c' },
        { kind: 'reply', text: 'take c' },
      ],
      layout,
      256,
    );
    const ids = {
      user: tokenizer.specialId('<user>'),
      eot: tokenizer.specialId('<eot>'),
      asst: tokenizer.specialId('<asst>'),
      obs: tokenizer.specialId('<obs>'),
    };
    const want = [
      ...layout.systemTurn,
      ids.user,
      ...tokenizer.encode('deliver item c to room 5 , then done .'),
      ids.eot,
      ids.asst,
      ...tokenizer.encode('go north'),
      ids.eot,
      ids.obs,
      ...tokenizer.encode('step 1 : room 5 exits south items c'),
      ids.eot,
      ids.asst,
      ...tokenizer.encode('take c'),
      ids.eot,
    ];
    expect(Array.from(ex.tokens)).toEqual(want);
    expect(ex.answerAt.map((t) => tokenizer.decode([ex.tokens[t]!])).join(' ')).toBe('go take c <eot>');
  });

  it('leaves out whole parts that would pass maxTokens', () => {
    const parts = [
      { kind: 'context', text: 'chunk 1 : set e 14' },
      { kind: 'context', text: ', query e answer' },
      { kind: 'target', text: '14' },
    ] as const;
    const full = encodeDense(parts, layout, 256);
    const cut = encodeDense(parts, layout, full.tokens.length - 1);
    expect(cut.answerAt).toEqual([]);
    expect(tokenizer.decode(Array.from(cut.tokens))).toBe('<bos> chunk 1 : set e 14 , query e answer');
  });

  it('runs before the episode SFT, lowers its held-out loss, saves iteration 0, and is not redone on resume', async () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'crl-dense-')), 'base');
    const config = SftConfigSchema.parse({
      env: { name: 'kv-ledger', knobs: { queries: 1, keys: 4 } },
      model: { preset: 'tiny' },
      episodes: 4,
      epochs: 1,
      heldOutEpisodes: 0,
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
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one

  it('runs the recall stage first with its own batch size and reports held-out recall', async () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    const config = SftConfigSchema.parse({
      env: { name: 'kv-ledger', knobs: { queries: 1, keys: 4 } },
      model: { preset: 'tiny' },
      episodes: 2,
      epochs: 1,
      heldOutEpisodes: 0,
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
    // A recall stage that ends between evaluation points gets its own point, and the log shows the
    // recall accuracy only up to it (afterwards the family forms overwrite that skill).
    const short = SftConfigSchema.parse({
      ...config,
      dense: { steps: 6, recallSteps: 3, recallBatch: 2, batch: 2, evalEvery: 4 },
    });
    const dir3 = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    const log: string[] = [];
    await runSft({ runDir: dir3, config: short, log: (l) => log.push(l) });
    expect(
      JSON.parse(readFileSync(join(dir3, 'dense-warmup.json'), 'utf8')).curve.map((p: { step: number }) => p.step),
    ).toEqual([0, 3, 4, 6]);
    const warm = log.filter((l) => l.startsWith('dense warm-up'));
    expect(warm.map((l) => l.includes('recall acc'))).toEqual([true, false, false]);
    // Below recallMinAcc at its end the recall stage goes on in blocks of RECALL_BLOCK steps, up to
    // recallMaxSteps, and the log keeps showing the recall accuracy while it runs.
    const slow = SftConfigSchema.parse({
      ...config,
      dense: {
        steps: 2 * RECALL_BLOCK + 10,
        recallSteps: 5,
        recallMinAcc: 1,
        recallMaxSteps: 2 * RECALL_BLOCK + 5,
        recallBatch: 1,
        batch: 1,
        evalEvery: 1000,
      },
    });
    const dir4 = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    const slowLog: string[] = [];
    await runSft({ runDir: dir4, config: slow, log: (l) => slowLog.push(l) });
    const slowCurve = JSON.parse(readFileSync(join(dir4, 'dense-warmup.json'), 'utf8')).curve;
    expect(slowCurve.map((p: { step: number }) => p.step)).toEqual([
      0,
      5,
      5 + RECALL_BLOCK,
      5 + 2 * RECALL_BLOCK,
      10 + 2 * RECALL_BLOCK,
    ]);
    expect(slowCurve.map((p: { recallStage?: boolean }) => p.recallStage === true)).toEqual([
      false,
      true,
      true,
      true,
      false,
    ]);
    expect(slowLog.filter((l) => l.startsWith('dense warm-up')).map((l) => l.includes('recall acc'))).toEqual([
      true,
      true,
      true,
      false,
    ]);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one

  it('replay: dense sequences as SFT sequences, masked at the supervised positions, deterministic per rng', async () => {
    const family = getFamily('fog-courier');
    const config = DenseWarmupSchema.parse({ probes: 6 });
    const make = (seed: number, n: number) =>
      denseReplay({ family, knobs: {}, layout, config, rng: new Rng(seed), n, maxTokens: 256 });
    const a = make(3, 5);
    expect(a).toHaveLength(5);
    expect(make(3, 5)).toEqual(a);
    for (const s of a) {
      expect(s.mask.length).toBe(s.tokens.length);
      // Supervised: the assistant turns only (replies and summaries, their <eot>); never the
      // instruction or the observations.
      const words = Array.from(s.tokens, (t) => tokenizer.decode([t]));
      let inAssistant = false;
      const assistant = words.map((w) => {
        const inside = inAssistant && w !== '<asst>';
        if (w === '<asst>') inAssistant = true;
        if (w === '<eot>') inAssistant = false;
        return inside;
      });
      const sup = Array.from(s.mask.keys()).filter((t) => s.mask[t] === 1);
      expect(sup.length).toBeGreaterThan(0);
      expect(sup.every((t) => assistant[t])).toBe(true);
    }
    const first = encodeDense(
      family.sft!.dense!({
        rng: new Rng(3),
        knobs: family.knobs.parse({}),
        maxChunks: 8,
        probes: 6,
        summaryShare: 0.5,
      }),
      layout,
      256,
    );
    expect(Array.from(a[0]!.tokens)).toEqual(Array.from(first.tokens));
    expect(a[0]!.mask.reduce((x, y) => x + y, 0)).toBe(first.answerAt.length);
    expect(make(3, 0)).toEqual([]);
    expect(
      denseReplay({
        family: getFamily('chunk-sum'),
        knobs: {},
        layout,
        config,
        rng: new Rng(3),
        n: 5,
        maxTokens: 256,
      }),
    ).toEqual([]);
  });

  it('replay joins every epoch of the episode SFT (more optimizer steps on the same episodes)', async () => {
    const base = {
      env: { name: 'fog-courier' },
      model: { preset: 'tiny' },
      episodes: 2,
      epochs: 1,
      heldOutEpisodes: 0,
      batchTokens: 256,
    };
    const steps = async (replay: number) => {
      const runDir = join(mkdtempSync(join(tmpdir(), 'crl-replay-')), 'base');
      await runSft({ runDir, config: SftConfigSchema.parse({ ...base, dense: { replay } }), log: () => {} });
      return JSON.parse(readFileSync(join(runDir, 'sft-data.json'), 'utf8')).optimizerSteps as number;
    };
    const [without, withReplay] = [await steps(0), await steps(16)];
    expect(withReplay).toBeGreaterThan(without);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one

  it('gives a family without a dense generator the recall stage only', async () => {
    const base = { env: { name: 'chunk-sum' }, model: { preset: 'tiny' }, episodes: 2, epochs: 1, heldOutEpisodes: 0 };
    const runDir = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    const lines: string[] = [];
    await runSft({
      runDir,
      config: SftConfigSchema.parse({ ...base, dense: { steps: 100, recallSteps: 6, batch: 2, evalEvery: 3 } }),
      log: (l) => lines.push(l),
    });
    const w = JSON.parse(readFileSync(join(runDir, 'dense-warmup.json'), 'utf8'));
    expect(w.curve.map((p: { step: number }) => p.step)).toEqual([0, 3, 6]);
    expect(lines[0]).toContain('dense warm-up 3/6');
    // Below recallMinAcc the recall-only warm-up goes on in blocks, as a dense family's recall stage
    // does, up to recallMaxSteps, and ends with the stage (no family forms follow).
    const dir3 = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    const slow = { steps: 6, recallSteps: 6, recallMinAcc: 1, recallMaxSteps: 6 + RECALL_BLOCK, batch: 2 };
    await runSft({
      runDir: dir3,
      config: SftConfigSchema.parse({ ...base, dense: { ...slow, evalEvery: 1000 } }),
      log: () => {},
    });
    const w3 = JSON.parse(readFileSync(join(dir3, 'dense-warmup.json'), 'utf8'));
    expect(w3.curve.map((p: { step: number }) => p.step)).toEqual([0, 6, 6 + RECALL_BLOCK]);
    // No recall stage: nothing to warm up with, the SFT starts at once.
    const dir2 = join(mkdtempSync(join(tmpdir(), 'crl-recall-')), 'base');
    await runSft({ runDir: dir2, config: SftConfigSchema.parse({ ...base, dense: { steps: 100 } }), log: () => {} });
    expect(existsSync(join(dir2, 'dense-warmup.json'))).toBe(false);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one
});
