import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { latestCheckpoint, saveCheckpointDir } from '../runs/checkpoint-store.ts';
import { loadCheckpoint } from '../../model/formats/checkpoint.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { readTiming } from '../runs/timing-log.ts';
import { createRunDir } from '../runs/run-dir.ts';
import { train } from './train-loop.ts';
import { deepMerge } from '../../config/config-flags.ts';
import { SYSTEM_NAMES, systemOverrides } from '../reproduce/systems.ts';
import { crashAfter } from '../testing/crash-after.ts';

const config = parseTrainConfig({
  env: { name: 'chunk-sum' },
  model: { preset: 'tiny' },
  batchEpisodes: 3,
  iterations: 4,
  checkpointEvery: 2,
  ppo: { criticWarmupIterations: 1 },
  sampleTrajectories: 1,
});

/** What must replay exactly: the bytes of metrics.jsonl (the wall clock is in timing.jsonl). */
function replayable(dir: string): string {
  return readFileSync(join(dir, 'metrics.jsonl'), 'utf8');
}

describe('training loop', () => {
  it('resumes after an interruption to the same metrics as an uninterrupted run', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-train-'));
    const a = join(root, 'a');
    createRunDir({ dir: a, system: 'compaction-rl', config });
    await train({ runDir: a, config, actor: 'expert' });

    const b = join(root, 'b');
    createRunDir({ dir: b, system: 'compaction-rl', config });
    await expect(train({ runDir: b, config, actor: 'expert', progress: crashAfter(3) })).rejects.toThrow(
      'simulated crash',
    );
    // what kill -9 can leave behind: a torn metrics line and a half-written checkpoint dir
    appendFileSync(join(b, 'metrics.jsonl'), '{"iteration":4,"metr');
    appendFileSync(join(b, 'timing.jsonl'), '{"iteration":4,"tim');
    mkdirSync(join(b, 'checkpoints', '.tmp-iter-000004-999'));
    writeFileSync(join(b, 'checkpoints', '.tmp-iter-000004-999', 'policy.params.f32'), 'partial');
    expect(readMetrics(join(b, 'metrics.jsonl')).map((l) => l.iteration)).toEqual([1, 2, 3]);
    expect(latestCheckpoint(b)?.iteration).toBe(2);

    const ran: number[] = [];
    await train({
      runDir: b,
      config,
      actor: 'expert',
      progress: { start: () => undefined, stop: () => undefined, update: ({ iteration }) => void ran.push(iteration) },
    });
    expect(ran).toEqual([3, 4]); // continues after the checkpoint: nothing lost, nothing repeated
    const ma = readMetrics(join(a, 'metrics.jsonl'));
    expect(ma.map((l) => l.iteration)).toEqual([1, 2, 3, 4]);
    expect(replayable(b)).toBe(replayable(a));
    expect(ma[3]!.metrics['train/policy_updated']).toBe(1);
    // Timing lines past the checkpoint (iteration 3, and the torn one) were cut with the metrics:
    // every iteration is timed once, in order.
    expect(readTiming(join(b, 'timing.jsonl')).map((l) => l.iteration)).toEqual([1, 2, 3, 4]);
    expect(existsSync(join(b, 'checkpoints', '.tmp-iter-000004-999'))).toBe(false);
    expect(latestCheckpoint(b)?.iteration).toBe(4);
    const wa = await loadCheckpoint(latestCheckpoint(a)!.dir);
    const wb = await loadCheckpoint(latestCheckpoint(b)!.dir);
    expect(Buffer.from(wb.policy.net.params.buffer).equals(Buffer.from(wa.policy.net.params.buffer))).toBe(true);
    expect(Buffer.from(wb.critic!.net.params.buffer).equals(Buffer.from(wa.critic!.net.params.buffer))).toBe(true);
    expect(readFileSync(join(b, 'samples', 'iter-000004.txt'), 'utf8').length).toBeGreaterThan(0);
  });

  it('keeps the previous checkpoint as latest until a new one is complete', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-ckpt-'));
    await saveCheckpointDir({ runDir: dir, iteration: 5, write: (d) => writeFileSync(join(d, 'x'), 'five') });
    // killed while writing iteration 10: the temp dir is there, latest still says 5
    await expect(
      saveCheckpointDir({
        runDir: dir,
        iteration: 10,
        write: () => {
          throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    const c = latestCheckpoint(dir)!;
    expect(c.iteration).toBe(5);
    expect(readFileSync(join(c.dir, 'x'), 'utf8')).toBe('five');
    expect(existsSync(join(dir, 'checkpoints', `.tmp-iter-000010-${process.pid}`))).toBe(false); // cleaned on load
  });

  it('wires every system of method §7 into the update (one iteration each)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-systems-'));
    const last: Record<string, Record<string, number | null>> = {};
    for (const system of SYSTEM_NAMES.filter((s) => s !== 'base')) {
      const c = parseTrainConfig(
        deepMerge(
          {
            env: { name: 'chunk-sum' },
            model: { preset: 'tiny' },
            batchEpisodes: 4,
            iterations: 1,
            ppo: { criticWarmupIterations: 0 },
          },
          systemOverrides(system),
        ),
      );
      createRunDir({ dir: join(root, system), system, config: c });
      await train({ runDir: join(root, system), config: c, actor: 'policy' });
      last[system] = readMetrics(join(root, system, 'metrics.jsonl'))[0]!.metrics;
    }
    for (const m of Object.values(last)) expect(m['train/policy_updated']).toBe(1);
    expect(last['ppo-single-window']!['rollout/compactions_per_episode']).toBe(0); // K = 1
    expect(last['compaction-rl']!['rollout/compactions_per_episode']).toBeGreaterThan(0);
    expect(last['compaction-rl']!['tokens/summary']).toBeGreaterThan(0);
    expect(last['no-summary-training']!['tokens/summary']).toBe(0); // summaries leave the policy loss
    expect(last['broadcast']!['train/critic_steps']).toBe(0); // critic-free
    expect(last['compaction-rl']!['train/critic_steps']).toBeGreaterThan(0);
  });

  it('refuses to start a second run in the same directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-dup-'));
    createRunDir({ dir, system: 's', config });
    expect(() => createRunDir({ dir, system: 's', config })).toThrow(/--resume/);
  });
});
