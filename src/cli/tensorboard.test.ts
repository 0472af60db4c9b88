/**
 * `crl train` writes TensorBoard event files (docs/tensorboard.md), checked with real `crl`
 * processes: every record's CRC, every finite number of metrics.jsonl and timing.jsonl as a scalar
 * under the same tag at its iteration, the sampled episodes as text, the advantages by segment kind
 * and the summary lengths as histograms (checked against the saved credit); none with --no-tensorboard;
 * a run killed with SIGKILL and resumed adds a file and holds every step once.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tinyCheckpoint } from '../adapters/testing/crl-serve.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { readTiming } from '../experiments/runs/timing-log.ts';
import { HISTOGRAM_TAGS } from '../experiments/runs/tensorboard-histograms.ts';
import { listSampleFiles, readSampleFile } from '../report/sample-files.ts';
import { eventFilesIn } from '../util/tfevents/event-file.ts';
import { readEventDir, type EventDir } from '../util/tfevents/testing/read-event-dir.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { CRL_BIN, crlAsync } from './testing/spawn-crl.ts';

const TRAIN = ['train', '--env', 'kv-ledger', '--actor', 'expert', '--batch', '4'];

/** Every finite number of the run's metrics.jsonl and timing.jsonl, as TensorBoard should hold it. */
function expectedScalars(run: string): Array<{ tag: string; step: number; value: number }> {
  const lines = [
    ...readMetrics(join(run, 'metrics.jsonl')).map((l) => ({ step: l.iteration, values: l.metrics })),
    ...readTiming(join(run, 'timing.jsonl')).map((l) => ({ step: l.iteration, values: l.timing })),
  ];
  return lines.flatMap(({ step, values }) =>
    Object.entries(values)
      .filter((e): e is [string, number] => e[1] !== null && Number.isFinite(e[1]))
      .map(([tag, v]) => ({ tag, step, value: Math.fround(v) })),
  );
}

/** Each (tag, step) once across all files: no iteration was written twice. */
function expectEachStepOnce(events: EventDir): void {
  const keys = [...events.scalars, ...events.texts].map((v) => `${v.tag}@${v.step}`);
  expect(new Set(keys).size).toBe(keys.length);
}

/**
 * Each iteration's histograms hold the saved episodes' numbers: the estimator's advantage of every
 * generated token by segment kind (saved to 6 significant digits), every summary's generated tokens.
 */
function expectHistogramsMatchCredit(run: string, events: EventDir): void {
  const files = listSampleFiles(run);
  expect(files.map((f) => f.iteration)).toEqual([1, 2, 3]);
  for (const { iteration, path } of files) {
    const episodes = readSampleFile(path);
    expect(episodes).toHaveLength(4); // the whole batch
    const at = (tag: string) => events.histograms.find((h) => h.tag === tag && h.step === iteration)?.histogram;
    for (const kind of ['execution', 'summary'] as const) {
      const values = episodes.flatMap((e) =>
        e.credit.segments.flatMap((c, s) => (e.record.segments[s]!.kind === kind ? c.advantage : [])),
      );
      const h = at(HISTOGRAM_TAGS[kind])!;
      expect(h.num).toBe(values.length);
      expect(h.bucket.reduce((a, b) => a + b, 0)).toBe(values.length);
      expect(h.min).toBeCloseTo(Math.min(...values), 4);
      expect(h.max).toBeCloseTo(Math.max(...values), 4);
      expect(h.sum).toBeCloseTo(
        values.reduce((a, b) => a + b, 0),
        3,
      );
    }
    const lengths = episodes.flatMap((e) =>
      e.record.segments.filter((s) => s.kind === 'summary').map((s) => s.lossMask.filter((m) => m === 1).length),
    );
    expect(lengths.length).toBeGreaterThan(0);
    expect(at(HISTOGRAM_TAGS.summaryLength)).toMatchObject({
      num: lengths.length,
      sum: lengths.reduce((a, b) => a + b, 0),
      min: Math.min(...lengths),
      max: Math.max(...lengths),
    });
  }
}

const byTagStep = (a: { tag: string; step: number }, b: { tag: string; step: number }) =>
  a.step - b.step || a.tag.localeCompare(b.tag);

describe('crl train writes TensorBoard event files (real crl processes)', { timeout: 300_000 }, () => {
  let root: string;
  let ckpt: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'crl-tensorboard-'));
    ckpt = join(root, 'base');
    await tinyCheckpoint(ckpt, { seed: 1 });
  });

  it('by default: every finite metric and timing number as a scalar at its iteration, episodes as text', async () => {
    const run = join(root, 'on');
    // Every episode of the batch saved with its credit, so the histograms can be checked against it.
    const config = join(root, 'all-samples.json');
    writeFileSync(config, JSON.stringify({ sampleTrajectories: 4 }));
    const args = [...TRAIN, '--init', ckpt, '--iterations', '3', '--config', config, '--out', run];
    const r = await crlAsync(args, { timeoutMs: 240_000 });
    expect(r.code, r.stderr).toBe(0);
    const events = readEventDir(run); // throws on a record whose CRC does not match
    expect(events.files).toHaveLength(1);
    expect(events.files[0]!.tornBytes).toBe(0);
    const expected = expectedScalars(run);
    expect(new Set(expected.map((s) => s.step))).toEqual(new Set([1, 2, 3]));
    expect(expected.some((s) => s.tag === 'rollout/success_rate')).toBe(true);
    expect(expected.some((s) => s.tag.startsWith('perf/'))).toBe(true);
    // Exactly these: the same tags, steps and float32 values, nothing else.
    expect([...events.scalars].sort(byTagStep)).toEqual([...expected].sort(byTagStep));
    expect(events.texts.length).toBeGreaterThan(0);
    for (const t of events.texts) {
      expect(t.plugin).toBe('text');
      expect(t.tag).toMatch(/^samples\/episode_\d+$/);
      expect(t.text).toMatch(/reward \d/);
    }
    expect(events.texts.some((t) => /summary 1:/.test(t.text))).toBe(true); // kv-ledger episodes compact
    expectEachStepOnce(events);
    expectHistogramsMatchCredit(run, events);
  });

  it('--no-tensorboard writes no event file, and the run keeps it off', async () => {
    const run = join(root, 'off');
    const r = await crlAsync([...TRAIN, '--init', ckpt, '--iterations', '2', '--no-tensorboard', '--out', run], {
      timeoutMs: 240_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(readMetrics(join(run, 'metrics.jsonl'))).toHaveLength(2);
    expect(eventFilesIn(run)).toEqual([]);
    expect(JSON.parse(readFileSync(join(run, 'config.json'), 'utf8')).config.tensorboard).toBe(false);
  });

  it('a run killed with SIGKILL and resumed adds an event file; together they hold every iteration once', async () => {
    const run = join(root, 'killed');
    // Steps wait, so the kill lands while iterations remain.
    const args = [...TRAIN, '--init', ckpt, '--iterations', '5', '--checkpoint-every', '1', '--step-delay-ms', '40'];
    const child = spawn(process.execPath, [CRL_BIN, ...args, '--out', run], { stdio: 'ignore' });
    const logged = () => (existsSync(join(run, 'metrics.jsonl')) ? readMetrics(join(run, 'metrics.jsonl')).length : 0);
    await waitFor(() => logged() >= 2 || child.exitCode !== null, { what: 'two iterations', timeoutMs: 200_000 });
    child.kill('SIGKILL');
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));
    expect(logged()).toBeLessThan(5);
    expect(eventFilesIn(run)).toHaveLength(1);

    const resumed = await crlAsync(['train', '--resume', run], { timeoutMs: 240_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = readEventDir(run);
    expect(events.files).toHaveLength(2);
    expect(events.files.every((f) => f.tornBytes === 0)).toBe(true);
    expectEachStepOnce(events);
    expect([...events.scalars].sort(byTagStep)).toEqual(expectedScalars(run).sort(byTagStep));
    expect(new Set(events.texts.map((t) => t.step))).toEqual(new Set([1, 2, 3, 4, 5]));
  });
});
