import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { loadCheckpoint } from '../../model/formats/checkpoint.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { latestCheckpoint } from '../runs/checkpoint-store.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { train } from './train-loop.ts';
import { aroundStages, STAGE_NAMES, type StageName } from './training-stages.ts';

const config = parseTrainConfig({
  env: { name: 'chunk-sum' },
  model: { preset: 'tiny' },
  batchEpisodes: 4,
  groupSize: 2,
  iterations: 3,
  checkpointEvery: 2,
  ppo: { criticWarmupIterations: 1 },
  sampleTrajectories: 2,
});

/** The bytes of metrics.jsonl (the wall clock is in timing.jsonl). */
function replayable(dir: string): string {
  return readFileSync(join(dir, 'metrics.jsonl'), 'utf8');
}

async function finalWeights(dir: string): Promise<Buffer> {
  const w = await loadCheckpoint(latestCheckpoint(dir)!.dir);
  return Buffer.concat([Buffer.from(w.policy.net.params.buffer), Buffer.from(w.critic!.net.params.buffer)]);
}

describe('training stages', () => {
  it('runs every stage, in order, once per iteration, through a wrapper', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-stages-')), 'run');
    const seen: StageName[] = [];
    await train({
      runDir: dir,
      config,
      actor: 'expert',
      wrapStages: (stages) =>
        aroundStages(stages, (name, call) => {
          seen.push(name);
          return call();
        }),
    });
    // the run's first publish, three iterations, the final publish
    expect(seen).toEqual(['publish', ...STAGE_NAMES, ...STAGE_NAMES, ...STAGE_NAMES, 'publish']);
    expect(readMetrics(join(dir, 'metrics.jsonl')).map((l) => l.iteration)).toEqual([1, 2, 3]);
  });

  it('trains the same from recorded episodes as from the sampler that recorded them', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-stages-'));
    const recorded = new Map<number, EpisodeRecord[]>();
    await train({
      runDir: join(root, 'sampled'),
      config,
      actor: 'policy',
      wrapStages: (stages) => ({
        ...stages,
        sample: async (input) => {
          const records = await stages.sample(input);
          recorded.set(input.iteration, structuredClone(records));
          return records;
        },
      }),
    });
    expect([...recorded.keys()]).toEqual([1, 2, 3]);

    // What a rollout queue or an asynchronous loop does: the sample stage hands over episodes
    // sampled elsewhere; nothing draws from the sampler's streams, the PPO stream stays the same.
    const replayed: number[] = [];
    await train({
      runDir: join(root, 'replayed'),
      config,
      actor: 'policy',
      wrapStages: (stages) => ({
        ...stages,
        sample: ({ iteration }) => {
          replayed.push(iteration);
          return structuredClone(recorded.get(iteration)!);
        },
      }),
    });
    expect(replayed).toEqual([1, 2, 3]);
    const sampled = readMetrics(join(root, 'sampled', 'metrics.jsonl'));
    expect(sampled.map((l) => l.iteration)).toEqual([1, 2, 3]);
    expect(sampled[2]!.metrics['train/policy_updated']).toBe(1);
    expect(replayable(join(root, 'replayed'))).toBe(replayable(join(root, 'sampled')));
    expect((await finalWeights(join(root, 'replayed'))).equals(await finalWeights(join(root, 'sampled')))).toBe(true);
  });

  it('starts and stops where it is told (a benchmark past the critic warm-up)', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-stages-')), 'run');
    const ran: number[] = [];
    const { lastIteration } = await train({
      runDir: dir,
      config: { ...config, iterations: 10 },
      actor: 'expert',
      firstIteration: 2,
      lastIteration: 3,
      progress: { start: () => undefined, stop: () => undefined, update: ({ iteration }) => void ran.push(iteration) },
    });
    expect(ran).toEqual([2, 3]);
    expect(lastIteration).toBe(3);
    // iteration 2 is past the warm-up: the policy updates on the first iteration run
    expect(readMetrics(join(dir, 'metrics.jsonl')).map((l) => l.metrics['train/policy_updated'])).toEqual([1, 1]);
  });
});
