import { SHELL_TOOLS } from '../../env/action-tools.ts';
import { EngineError } from '../../adapters/engine-error.ts';
import { EnginePool } from '../../adapters/engine-pool.ts';
import type { TokenSampler } from '../../contracts/index.ts';
import { createEnvironment } from '../../env/create-environment.ts';
import { getFamily } from '../../env/registry.ts';
import { harborOraclePolicy } from '../../env/harbor/oracle-policy.ts';
import { withStepDelay } from '../../env/step-delay.ts';
import { loadTokenizer, type LoadedTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import type { EpisodeMessage } from '../../queue/episode-message.ts';
import { JobRejected } from '../../queue/queue-worker.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { episodeOfJob } from '../../rollout/episode-job.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { mixSeed, Rng } from '../../util/random.ts';
import { newerWeightsFloor } from './newer-weights-floor.ts';
import { checkEngines, engineKey, taskDirInRoot, type WorkerBounds } from './worker-bounds.ts';

/**
 * What `crl worker` does with one episode job (docs/distributed.md): builds the environment from
 * the job's description where the episode runs, the tokenizer and rollout settings the trainer
 * named, and the sampler the job asks for (the engine replicas, held to the job's weight version,
 * or the family's scripted expert), then runs the episode exactly as the trainer's own process
 * would (rollout/runner.ts) and returns its record. A job outside the worker's bounds (a task
 * folder outside its root, an engine off its allow list: worker-bounds.ts) is refused first.
 */
export class RolloutWorker {
  private readonly pools = new Map<string, EnginePool>();
  private readonly tokenizers = new Map<string, LoadedTokenizer>();

  private readonly bounds: WorkerBounds;

  constructor(
    private readonly options: {
      stepDelayMs?: number;
      log?: (line: string) => void;
      /** The real path task folders must lie under (crl worker --task-root); absent: no task folders. */
      taskRoot?: string;
      /** The engine URLs jobs may name (crl worker --allow-engines); absent: any. */
      allowEngines?: readonly string[];
    } = {},
  ) {
    this.bounds = {
      taskRoot: options.taskRoot ?? null,
      engines: options.allowEngines ? new Set(options.allowEngines.map(engineKey)) : null,
    };
  }

  /**
   * Throws JobRefused when the job is outside this worker's bounds; the job to run otherwise, its
   * task folder replaced by the real path that was checked (a link swapped in later is not followed).
   */
  admit(message: EpisodeMessage): EpisodeMessage['job'] {
    if (message.sampler.kind === 'engines') checkEngines(message.sampler.urls, this.bounds.engines);
    const { job } = message;
    if (job.env.kind !== 'harbor') return job;
    return { ...job, env: { ...job.env, taskDir: taskDirInRoot(job.env.taskDir, this.bounds.taskRoot) } };
  }

  /**
   * Runs the job's episode. An engine error it throws (an engine that never answered this worker,
   * a refused request: the trainer's own process would stop the run) is named an `engine` fault,
   * so a job given up for it counts as one on the trainer's side (docs/faults.md).
   */
  async run(message: EpisodeMessage, signal: AbortSignal): Promise<EpisodeRecord> {
    try {
      return await this.runEpisode(message, signal);
    } catch (e) {
      if (e instanceof EngineError && !('faultKind' in e)) Object.assign(e, { faultKind: 'engine' });
      throw e;
    }
  }

  private async runEpisode(message: EpisodeMessage, signal: AbortSignal): Promise<EpisodeRecord> {
    const job = this.admit(message);
    const tokenizer = this.tokenizer(message.tokenizer);
    let rollout;
    try {
      // The tools format (docs/agent-format.md): a task folder's tools are the shell's, a family's its own.
      const tools = job.env.kind === 'harbor' ? SHELL_TOOLS : (getFamily(job.env.family).tools ?? null);
      rollout = resolveRolloutConfig({ input: message.rollout, tokenizer, tools });
    } catch (e) {
      throw new JobRejected(`the job's rollout settings: ${(e as Error).message}`);
    }
    let sampler: TokenSampler;
    let pool: EnginePool | null = null;
    // The version each sampler call is recorded with (its segment keeps its first call's): the job's.
    let version = () => job.policyVersion;
    // The job's sampling seed: the expert's stream, or each engine request's own seed.
    const jobSeed = mixSeed(job.seed, job.policyVersion);
    if (message.sampler.kind === 'engines' && message.sampler.orNewer) {
      pool = this.pool(message.sampler.urls, message.sampler.protocol);
      const floor = await newerWeightsFloor({ pool, atLeast: job.policyVersion, seed: jobSeed });
      sampler = floor.sampler;
      version = floor.version;
    } else if (message.sampler.kind === 'engines') {
      pool = this.pool(message.sampler.urls, message.sampler.protocol);
      sampler = pool.sampler({ weightVersion: message.sampler.weightVersion, seed: jobSeed });
    } else {
      let expert;
      if (job.env.kind === 'harbor') {
        // A task folder's expert is Harbor's oracle agent, which runs the solution it was given.
        if (!job.env.exposeSolution) throw new JobRejected('the oracle acts only on task folders with exposeSolution');
        expert = harborOraclePolicy;
      } else
        try {
          expert = getFamily(job.env.family).expert;
        } catch (e) {
          throw new JobRejected((e as Error).message);
        }
      sampler = textPolicySampler({ tokenizer, policy: expert, rng: new Rng(jobSeed), agent: rollout.layout.agent });
    }
    // The worker's own --step-delay-ms wins over the job's (a measurement on this machine).
    const delay = this.options.stepDelayMs ?? message.stepDelayMs;
    let episode;
    try {
      episode = episodeOfJob(job, (spec) => withStepDelay(createEnvironment(spec), delay));
    } catch (e) {
      throw new JobRejected(`cannot build the environment: ${(e as Error).message}`);
    }
    try {
      const [record] = await runEpisodes({
        episodes: [episode],
        config: rollout.config,
        layout: rollout.layout,
        actor: sampler,
        policyVersion: version,
        signal,
      });
      return record!;
    } finally {
      pool?.forget(job.episodeId);
    }
  }

  private tokenizer(t: EpisodeMessage['tokenizer']): LoadedTokenizer {
    let loaded = this.tokenizers.get(t.name);
    if (!loaded) {
      try {
        loaded = loadTokenizer(t.name);
      } catch (e) {
        throw new JobRejected(`tokenizer ${t.name}: ${(e as Error).message}`);
      }
      this.tokenizers.set(t.name, loaded);
    }
    if (loaded.sha256 !== t.sha256)
      throw new JobRejected(
        `tokenizer ${t.name} on this worker (sha256 ${loaded.sha256.slice(0, 12)}) differs from the trainer's (${t.sha256.slice(0, 12)})`,
      );
    return loaded;
  }

  /** One pool per replica set, shared by the jobs that name it (stickiness and health carry over). */
  private pool(urls: readonly string[], protocol: 'sglang'): EnginePool {
    const key = `${protocol} ${urls.join(',')}`;
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new EnginePool({ urls, protocol, ...(this.options.log ? { log: this.options.log } : {}) });
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** Replica health of every pool, for progress lines. */
  describeEngines(): string {
    return [...this.pools.values()].map((p) => p.describe()).join('; ');
  }
}
