import { appendFileSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventFilesIn } from '../../util/tfevents/event-file.ts';
import { readEventDir } from '../../util/tfevents/testing/read-event-dir.ts';
import { TensorboardLog, truncateTensorboard } from './tensorboard-log.ts';

function logged(dir: string, iterations: number[]): string {
  const log = new TensorboardLog(dir);
  for (const iteration of iterations)
    log.appendIteration({
      iteration,
      metrics: { 'rollout/reward_mean': iteration / 10, 'value/explained_variance': Number.NaN },
      timing: { 'perf/sample_s': iteration },
      texts: [{ tag: 'samples/episode_0', text: `episode of iteration ${iteration}` }],
    });
  return log.file!;
}

describe('the run TensorBoard log', () => {
  it('writes the finite numbers of an iteration as scalars at its step, and its texts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-tb-'));
    logged(dir, [1, 2]);
    const events = readEventDir(dir);
    expect(events.scalars).toEqual([
      { tag: 'rollout/reward_mean', step: 1, value: Math.fround(0.1) },
      { tag: 'perf/sample_s', step: 1, value: 1 },
      { tag: 'rollout/reward_mean', step: 2, value: Math.fround(0.2) },
      { tag: 'perf/sample_s', step: 2, value: 2 },
    ]);
    expect(events.texts.map((t) => [t.step, t.text, t.plugin])).toEqual([
      [1, 'episode of iteration 1', 'text'],
      [2, 'episode of iteration 2', 'text'],
    ]);
  });

  it('on resume cuts the files back to the checkpoint, a torn last record included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-tb-'));
    const file = logged(dir, [1, 2, 3]);
    appendFileSync(file, readFileSync(file).subarray(0, 30)); // a write cut short by a kill
    expect(readEventDir(dir).files[0]!.tornBytes).toBe(30);
    truncateTensorboard({ dir, lastIteration: 2 });
    const events = readEventDir(dir);
    expect(events.files.map((f) => f.tornBytes)).toEqual([0]);
    expect([...new Set(events.scalars.map((s) => s.step))]).toEqual([1, 2]);
    expect(events.files[0]!.events[0]!.fileVersion).toBe('brain.Event:2');
  });

  it('leaves files the checkpoint covers as they are, and makes nothing when there are none', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-tb-'));
    truncateTensorboard({ dir, lastIteration: 0 });
    expect(eventFilesIn(dir)).toEqual([]);
    const file = logged(dir, [1, 2]);
    const before = statSync(file);
    truncateTensorboard({ dir, lastIteration: 2 });
    expect(statSync(file).ino).toBe(before.ino); // not rewritten
    expect(readEventDir(dir).scalars).toHaveLength(4);
  });
});
