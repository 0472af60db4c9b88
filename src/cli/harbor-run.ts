import { DEFAULT_SANDBOX_BACKEND, sandboxBackend } from '../sandbox/registry.ts';
import { SUBMIT } from '../env/harbor/action.ts';
import type { TextPolicy } from '../contracts/index.ts';
import { HarborEnv } from '../env/harbor/harbor-env.ts';
import { HarborTaskError, loadHarborTasks, type HarborTask } from '../env/harbor/load-tasks.ts';
import { harborOraclePolicy } from '../env/harbor/oracle-policy.ts';
import type { EpisodeSpec } from '../rollout/episode.ts';
import { textPolicySampler } from '../rollout/text-policy-sampler.ts';
import type { TokenSampler } from '../contracts/index.ts';
import type { ChatTemplateSource } from '../rollout/chat-format.ts';
import { mixSeed, Rng } from '../util/random.ts';
import { CliError } from './errors.ts';
import type { SummaryWriterChoice } from './run-flags.ts';

/**
 * `crl run --env harbor:PATH` (docs/harbor.md): Harbor task folders instead of a registered
 * family. Episode i runs task i mod T (tasks sorted by folder name); its seed is the task's index.
 * `--policy harbor-oracle` runs each task's solution/solve.sh, `harbor-nop` submits at once (Harbor's
 * oracle and nop agents); the others are the usual policies.
 */
export const HARBOR_PREFIX = 'harbor:';
export const HARBOR_ORACLE = 'harbor-oracle';
/** Harbor's `nop` agent: submits at once (a floor: a suite it passes tests nothing). */
export const HARBOR_NOP = 'harbor-nop';

export function isHarborEnv(env: string): boolean {
  return env.startsWith(HARBOR_PREFIX);
}

/** Rollout defaults for shell work (subword tokens): room for a command, its output and a summary. */
export const HARBOR_ROLLOUT_DEFAULTS = {
  contextWindow: 8192,
  compactThreshold: 2048,
  maxActionTokens: 384,
  maxObservationTokens: 1024,
  summaryMaxTokens: 512,
  stepLimit: 100,
} as const;

export function loadHarborSuite(env: string, policy: string): HarborTask[] {
  const path = env.slice(HARBOR_PREFIX.length);
  if (path === '') throw new CliError('--env harbor:PATH needs a path: a Harbor task folder or a folder of them');
  const unavailable = sandboxBackend(DEFAULT_SANDBOX_BACKEND).unavailableReason(); // never an unsandboxed shell instead
  if (unavailable) throw new CliError(`--env ${env}: task folders run in a sandbox, and ${unavailable}`);
  let tasks: HarborTask[];
  try {
    tasks = loadHarborTasks(path);
  } catch (e) {
    if (e instanceof HarborTaskError) throw new CliError(`--env ${env}: ${e.message}`);
    throw e;
  }
  if (policy === HARBOR_ORACLE) {
    const missing = tasks.filter((t) => t.solutionDir === null).map((t) => t.name);
    if (missing.length > 0) {
      throw new CliError(
        `--policy ${HARBOR_ORACLE} runs each task's solution/solve.sh, but ${missing.length} task(s) have none: ${missing.slice(0, 5).join(', ')}`,
      );
    }
  }
  for (const t of tasks) {
    if (t.config.environment.allow_internet === true) {
      process.stderr.write(
        `crl: note: ${t.name} sets allow_internet = true; sandboxes have no network, it runs without\n`,
      );
    }
  }
  return tasks;
}

/** Episode i: task i mod T, its seed the task's index (built when its wave starts, run.ts). */
export function harborEpisode(options: { tasks: readonly HarborTask[]; index: number; policy: string }): EpisodeSpec {
  const { tasks, index: i, policy } = options;
  const index = i % tasks.length;
  const task = tasks[index]!;
  return {
    episodeId: `harbor-${task.name}-${i}`,
    env: new HarborEnv({ task, exposeSolution: policy === HARBOR_ORACLE }),
    seed: index,
  };
}

/** The harbor-oracle and harbor-nop policies as samplers (null for any other --policy). */
export function harborPolicySampler(options: {
  policy: string;
  tokenizer: ChatTemplateSource;
  seed: number;
}): TokenSampler | null {
  const nop: TextPolicy = () => SUBMIT;
  const policy = options.policy === HARBOR_ORACLE ? harborOraclePolicy : options.policy === HARBOR_NOP ? nop : null;
  if (!policy) return null;
  return textPolicySampler({ tokenizer: options.tokenizer, policy, rng: new Rng(mixSeed(options.seed, 1)) });
}

/** Harbor tasks have no scripted summary writers: only the policy itself, null or a checkpoint. */
export function checkHarborWriter(choice: SummaryWriterChoice): void {
  if (choice.kind === 'oracle' || choice.kind === 'lossy') {
    throw new CliError(
      `--summary-writer ${choice.kind}: Harbor task folders have no scripted summary writer; use self, null or checkpoint:PATH`,
    );
  }
}
