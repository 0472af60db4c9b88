import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { SamplerFault, type Environment, type EnvSpec, type TokenSampler } from '../../contracts/index.ts';
import { createEnvironment } from '../../env/create-environment.ts';
import { episodeOfJob } from '../../rollout/episode-job.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { latestCheckpoint } from '../runs/checkpoint-store.ts';
import { episodeJobs, sampleEpisodes } from './iteration-stages.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { train } from './train-loop.ts';
import type { TrainingRun, TrainingStages } from './training-stages.ts';

/**
 * Faults are not rewards (docs/faults.md): a run whose environment fails on every third reset, or
 * whose engine fails the same episodes, trains exactly as a run whose batches simply lacked those
 * episodes, and counts them.
 */
const base = {
  env: { name: 'chunk-sum' },
  model: { preset: 'tiny' },
  batchEpisodes: 6,
  iterations: 2,
  checkpointEvery: 2,
  ppo: { criticWarmupIterations: 0 },
  sampleTrajectories: 0,
} as const;

/** Every third reset (counted over the whole run) throws, as a sandbox that failed to start would. */
function failingEveryThirdReset(): (spec: EnvSpec) => Environment {
  let resets = 0;
  return (spec) => {
    const env = createEnvironment(spec);
    return {
      name: env.name,
      reset: (seed, o) => {
        if (++resets % 3 === 0) throw Object.assign(new Error('the sandbox did not start'), { faultKind: 'sandbox' });
        return env.reset(seed, o);
      },
      step: (action, o) => env.step(action, o),
    };
  };
}

const root = mkdtempSync(join(tmpdir(), 'crl-faults-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const leftOutConfig = parseTrainConfig({ ...base, faults: { retries: 0, maxFraction: 0.5 } });

/** The faulty runs' jobs without episodes 2 and 5 of each batch, trained once for the tests that compare with it. */
let lacking: Promise<string> | undefined;
function lackingRun(): Promise<string> {
  const config = leftOutConfig;
  const dir = join(root, 'lacking');
  lacking ??= train({
    runDir: dir,
    config,
    actor: 'policy',
    wrapStages: (stages, run) => ({
      ...stages,
      sample: ({ iteration, samplerRng, rng }) => {
        const jobs = episodeJobs({
          family: run.family,
          knobs: config.env.knobs,
          batchEpisodes: config.batchEpisodes,
          groupSize: config.groupSize,
          iteration,
          rng,
        }).filter((_, i) => i % 3 !== 2);
        return runEpisodes({
          episodes: jobs.map((j) => episodeOfJob(j, createEnvironment)),
          config: run.rollout,
          layout: run.layout,
          actor: run.models.sampler(samplerRng),
          policyVersion: () => iteration - 1,
        });
      },
    }),
  }).then(() => dir);
  return lacking;
}

/** The checkpoint files of two runs are byte for byte the same. */
function expectSameCheckpoint(a: string, b: string): void {
  for (const file of ['model.safetensors', 'optimizer.safetensors', 'critic.safetensors']) {
    const x = readFileSync(join(latestCheckpoint(a)!.dir, file));
    const y = readFileSync(join(latestCheckpoint(b)!.dir, file));
    expect(x.equals(y), file).toBe(true);
  }
}

/** Metrics both runs must share: all but the fault counts. */
function learned(dir: string) {
  return readMetrics(join(dir, 'metrics.jsonl')).map((l) =>
    Object.fromEntries(Object.entries(l.metrics).filter(([k]) => !k.startsWith('rollout/fault'))),
  );
}

describe('faults in training', () => {
  it('leaves faulted episodes out of the update and counts them: the checkpoint equals a run without them', async () => {
    const config = leftOutConfig;
    const faulty = join(root, 'faulty');
    const create = failingEveryThirdReset();
    await train({
      runDir: faulty,
      config,
      actor: 'policy',
      wrapStages: (stages, run) => ({
        ...stages,
        sample: ({ iteration, samplerRng, rng }) =>
          sampleEpisodes({
            family: run.family,
            knobs: config.env.knobs,
            rollout: run.rollout,
            layout: run.layout,
            sampler: run.models.sampler(samplerRng),
            createEnv: create,
            batchEpisodes: config.batchEpisodes,
            groupSize: config.groupSize,
            iteration,
            rng,
          }),
      }),
    });

    // The same jobs without episodes 2 and 5 of each batch (resets 3, 6, 9, 12 of the faulty run).
    const lacking = await lackingRun();

    const lines = readMetrics(join(faulty, 'metrics.jsonl'));
    expect(lines.map((l) => l.metrics['rollout/fault_sandbox'])).toEqual([2, 2]);
    expect(lines.map((l) => l.metrics['rollout/fault_left_out'])).toEqual([2, 2]);
    expect(lines.map((l) => l.metrics['rollout/episodes'])).toEqual([4, 4]);
    expect(lines[0]!.metrics['train/policy_updated']).toBe(1);
    expect(learned(faulty)).toEqual(learned(lacking));
    expectSameCheckpoint(faulty, lacking);
  });

  it("an engine that fails some episodes' requests: engine faults, left out the same way", async () => {
    const config = leftOutConfig;
    const dir = join(root, 'engine-faulty');
    await train({
      runDir: dir,
      config,
      actor: 'policy',
      wrapStages: (stages, run) => ({
        ...stages,
        sample: ({ iteration, samplerRng, rng }) => {
          const inner = run.models.sampler(samplerRng);
          // The engine fails every request of episodes 2 and 5 (as a replica that died under them
          // would, past the pool's wait), and answers the rest with the run's own sampler.
          const dead = (id: string | undefined) => /-ep[25]$/.test(id ?? '');
          const engine: TokenSampler = {
            sample: async (requests, params) => {
              const alive = requests.filter((r) => !dead(r.episodeId));
              const answers = alive.length > 0 ? await inner.sample(alive, params) : [];
              if (alive.length === requests.length) return answers;
              let k = 0;
              const results = requests.map((r) => (dead(r.episodeId) ? null : answers[k++]!));
              const reasons = requests.map((r) =>
                dead(r.episodeId) ? 'no engine replica answered within 60 s' : null,
              );
              throw new SamplerFault('no engine replica answered within 60 s', results, reasons);
            },
          };
          return sampleEpisodes({
            family: run.family,
            knobs: config.env.knobs,
            rollout: run.rollout,
            layout: run.layout,
            sampler: engine,
            batchEpisodes: config.batchEpisodes,
            groupSize: config.groupSize,
            iteration,
            rng,
          });
        },
      }),
    });
    const lines = readMetrics(join(dir, 'metrics.jsonl'));
    expect(lines.map((l) => l.metrics['rollout/fault_engine'])).toEqual([2, 2]);
    expect(lines.map((l) => l.metrics['rollout/fault_left_out'])).toEqual([2, 2]);
    expect(lines.map((l) => l.metrics['rollout/episodes'])).toEqual([4, 4]);
    const lacking = await lackingRun();
    expect(learned(dir)).toEqual(learned(lacking));
    expectSameCheckpoint(dir, lacking);
  });

  it('retries a faulted episode on a fresh environment, and stops with one line when faults exceed the share', async () => {
    const retried = join(root, 'retried');
    const config = parseTrainConfig({ ...base, iterations: 1, faults: { retries: 1, maxFraction: 0 } });
    const sample =
      (run: TrainingRun, retries: number): TrainingStages['sample'] =>
      ({ iteration, samplerRng, rng }) =>
        sampleEpisodes({
          family: run.family,
          knobs: config.env.knobs,
          rollout: run.rollout,
          layout: run.layout,
          sampler: run.models.sampler(samplerRng),
          createEnv: create,
          retries,
          batchEpisodes: config.batchEpisodes,
          groupSize: config.groupSize,
          iteration,
          rng,
        });
    let create = failingEveryThirdReset();
    await train({
      runDir: retried,
      config,
      actor: 'policy',
      wrapStages: (s, run) => ({ ...s, sample: sample(run, 1) }),
    });
    // Resets 3 and 6 fail; their retries are resets 7 and 8, which pass: nothing is left out.
    const [line] = readMetrics(join(retried, 'metrics.jsonl'));
    expect(line!.metrics['rollout/fault_retried']).toBe(2);
    expect(line!.metrics['rollout/fault_left_out']).toBe(0);
    expect(line!.metrics['rollout/episodes']).toBe(6);

    const stopped = join(root, 'stopped');
    const strict = parseTrainConfig({ ...base, iterations: 1, faults: { retries: 0, maxFraction: 0.2 } });
    create = failingEveryThirdReset();
    const err = await train({
      runDir: stopped,
      config: strict,
      actor: 'policy',
      wrapStages: (s, run) => ({ ...s, sample: sample(run, 0) }),
    }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(
      /^iteration 1: 2 of 6 episodes ended in faults after their retries \(more than faults.maxFraction 0.2\); the first: it1-ep2: sandbox fault during reset: .*the sandbox did not start$/,
    );
    expect((err as Error).message).not.toContain('\n');
  });
});
