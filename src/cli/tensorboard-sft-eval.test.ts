/**
 * `crl sft`, `crl eval` and `crl reproduce` write TensorBoard event files too (docs/tensorboard.md),
 * checked with real `crl` processes and the repository's reader (every record's CRC checked): SFT's
 * scalars are its metrics.jsonl numbers at each epoch, an evaluation's are its result file's Pass@1
 * and interval per mode, in the evaluated run's directory at its checkpoint's iteration (or beside
 * the result file for a policy that is no run), and a reproduce pipeline's every run holds its own.
 */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readEvalResult, type EvalResult } from '../eval/eval-result.ts';
import { evalTagPrefix } from '../experiments/evaluate/eval-tensorboard.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { eventFilesIn } from '../util/tfevents/event-file.ts';
import { readEventDir, type EventDir } from '../util/tfevents/testing/read-event-dir.ts';
import { crlAsync } from './testing/spawn-crl.ts';

const SFT = ['sft', '--env', 'kv-ledger', '--model', 'tiny', '--episodes', '2', '--epochs', '2', '--held-out', '0'];
const EVAL = ['eval', '--env', 'kv-ledger', '--tasks', '2', '--samples', '2', '--windows', '1,4'];

const byTagStep = (a: { tag: string; step: number }, b: { tag: string; step: number }) =>
  a.step - b.step || a.tag.localeCompare(b.tag);

/** The scalars an evaluation must leave: per mode, Pass@1, its interval and the compactions, as float32. */
function expectedEvalScalars(r: EvalResult, step: number) {
  const prefix = evalTagPrefix(r);
  return Object.entries(r.modes).flatMap(([mode, m]) =>
    [
      ['pass_at_1', m.passAt1],
      ['pass_at_1_low', m.low],
      ['pass_at_1_high', m.high],
      ['mean_compactions', m.meanCompactions],
    ].map(([name, v]) => ({ tag: `${prefix}/${mode}/${name as string}`, step, value: Math.fround(v as number) })),
  );
}

const evalScalarsOf = (events: EventDir) => events.scalars.filter((s) => s.tag.startsWith('eval/'));

describe(
  'crl sft, crl eval and crl reproduce write TensorBoard event files (real crl processes)',
  { timeout: 300_000 },
  () => {
    let root: string;
    let base: string;

    beforeAll(async () => {
      root = mkdtempSync(join(tmpdir(), 'crl-tensorboard-sft-'));
      base = join(root, 'base');
      const r = await crlAsync([...SFT, '--out', base], { timeoutMs: 240_000 });
      expect(r.code, r.stderr).toBe(0);
    });

    it('crl sft: every finite metric of each epoch as a scalar, its seconds, and an expert episode as text', () => {
      const events = readEventDir(base);
      expect(events.files).toHaveLength(1);
      const lines = readMetrics(join(base, 'metrics.jsonl'));
      expect(lines.map((l) => l.iteration)).toEqual([1, 2]);
      const expected = lines.flatMap((l) =>
        Object.entries(l.metrics)
          .filter((e): e is [string, number] => e[1] !== null && Number.isFinite(e[1]))
          .map(([tag, v]) => ({ tag, step: l.iteration, value: Math.fround(v) })),
      );
      expect(expected.some((s) => s.tag === 'sft/loss')).toBe(true);
      const [timing, scalars] = [events.scalars.filter((s) => s.tag === 'perf/epoch_s'), events.scalars];
      expect(timing.map((s) => s.step)).toEqual([1, 2]);
      expect(timing.every((s) => s.value > 0)).toBe(true);
      expect(scalars.filter((s) => s.tag !== 'perf/epoch_s').sort(byTagStep)).toEqual(expected.sort(byTagStep));
      expect(events.texts.map((t) => [t.tag, t.step, t.plugin])).toEqual([
        ['samples/episode_0', 1, 'text'],
        ['samples/episode_0', 2, 'text'],
      ]);
      expect(events.texts[0]!.text).toMatch(/reward \d/);
    });

    it('crl sft --no-tensorboard writes none', async () => {
      const off = join(root, 'base-off');
      const r = await crlAsync([...SFT, '--epochs', '1', '--no-tensorboard', '--out', off], { timeoutMs: 240_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(readMetrics(join(off, 'metrics.jsonl'))).toHaveLength(1);
      expect(eventFilesIn(off)).toEqual([]);
    });

    it('crl eval of a run: Pass@1 with its interval per mode, in the run at its checkpoint’s iteration', async () => {
      const out = join(root, 'base-eval.json');
      const r = await crlAsync([...EVAL, '--policy', base, '--out', out], { timeoutMs: 240_000 });
      expect(r.code, r.stderr).toBe(0);
      const events = readEventDir(base);
      expect(events.files).toHaveLength(2); // SFT's, then the evaluation's own
      const result = readEvalResult(out);
      expect(Object.keys(result.modes)).toEqual(['x1', 'x4']);
      expect(evalScalarsOf(events).sort(byTagStep)).toEqual(expectedEvalScalars(result, 2).sort(byTagStep));
    });

    it('crl eval of the expert: beside the result file at step 0; --no-tensorboard: none', async () => {
      const dir = join(root, 'expert');
      const out = join(dir, 'expert.json');
      const r = await crlAsync([...EVAL, '--policy', 'expert', '--out', out], { timeoutMs: 240_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(evalScalarsOf(readEventDir(dir)).sort(byTagStep)).toEqual(
        expectedEvalScalars(readEvalResult(out), 0).sort(byTagStep),
      );
      const quiet = join(root, 'quiet');
      const q = await crlAsync([...EVAL, '--policy', 'expert', '--no-tensorboard', '--out', join(quiet, 'e.json')]);
      expect(q.code, q.stderr).toBe(0);
      expect(eventFilesIn(quiet)).toEqual([]);
    });

    it('crl reproduce: every run of the pipeline holds its SFT or training scalars and its evaluations', async () => {
      const pipe = join(root, 'pipe');
      const r = await crlAsync(['reproduce', '--preset', 'smoke', '--seeds', '3', '--out', pipe], {
        timeoutMs: 280_000,
      });
      expect(r.code, r.stderr).toBe(0);
      const runs = readdirSync(join(pipe, 'systems'));
      expect(runs.length).toBeGreaterThan(1);
      for (const run of runs) {
        const events = readEventDir(join(pipe, 'systems', run));
        const first = run.startsWith('base--') ? 'sft/loss' : 'rollout/success_rate';
        expect(
          events.scalars.some((s) => s.tag === first),
          run,
        ).toBe(true);
      }
      // Each evaluation file of the pipeline is in the run it evaluated, at its checkpoint's iteration.
      const files = readdirSync(join(pipe, 'eval')).filter((f) => f.endsWith('.json'));
      expect(files.length).toBeGreaterThan(0);
      for (const f of files) {
        const result = readEvalResult(join(pipe, 'eval', f));
        const checkpoint = result.policy; // systems/<run>/checkpoints/iter-NNNNNN, relative to the pipeline
        const run = join(pipe, dirname(dirname(checkpoint)));
        expect(existsSync(run), checkpoint).toBe(true);
        const step = Number(basename(checkpoint).replace('iter-', ''));
        const want = expectedEvalScalars(result, step);
        const have = evalScalarsOf(readEventDir(run));
        for (const w of want) expect(have, `${f}: ${w.tag}`).toContainEqual(w);
      }
    });
  },
);
