import type { AgentProtocol } from '../rollout/agent-format/agent-protocol.ts';
import { sandboxBackend } from '../sandbox/registry.ts';
import { taskSandbox, type SandboxChoice } from '../env/harbor/task-sandbox.ts';
import { describeTaskImage, taskNetwork } from '../env/harbor/task-image.ts';
import { imagePresentSync } from '../sandbox/docker-images.ts';
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
import { HARBOR_PREFIX, isHarborEnv } from '../env/harbor/task-set.ts';
import type { SummaryWriterChoice } from './run-flags.ts';

/**
 * `crl run --env harbor:PATH` (docs/harbor.md): Harbor task folders instead of a registered
 * family. Episode i runs task i mod T (tasks sorted by folder name); its seed is the task's index.
 * `--policy harbor-oracle` runs each task's solution/solve.sh, `harbor-nop` submits at once (Harbor's
 * oracle and nop agents); the others are the usual policies.
 */
export { HARBOR_PREFIX, HARBOR_ROLLOUT_DEFAULTS, isHarborEnv } from '../env/harbor/task-set.ts';
export const HARBOR_ORACLE = 'harbor-oracle';
/** Harbor's `nop` agent: submits at once (a floor: a suite it passes tests nothing). */
export const HARBOR_NOP = 'harbor-nop';

/** A task folder and the sandbox backend its episodes run in (task-sandbox.ts). */
export interface SuiteTask {
  task: HarborTask;
  sandbox: 'docker' | 'bwrap';
}

export function loadHarborSuite(env: string, policy: string, choice: SandboxChoice = 'auto'): SuiteTask[] {
  const path = env.slice(HARBOR_PREFIX.length);
  if (path === '') throw new CliError('--env harbor:PATH needs a path: a Harbor task folder or a folder of them');
  let suite: SuiteTask[];
  try {
    suite = loadHarborTasks(path).map((task) => ({ task, sandbox: taskSandbox(task, choice) }));
  } catch (e) {
    if (e instanceof HarborTaskError) throw new CliError(`--env ${env}: ${e.message}`);
    throw e;
  }
  for (const name of new Set(suite.map((s) => s.sandbox))) {
    const unavailable = sandboxBackend(name).unavailableReason(); // never an unsandboxed shell instead
    if (unavailable) throw new CliError(`--env ${env}: task folders run in a sandbox (${name}), and ${unavailable}`);
  }
  const tasks = suite.map((s) => s.task);
  if (policy === HARBOR_ORACLE) {
    const missing = tasks.filter((t) => t.solutionDir === null).map((t) => t.name);
    if (missing.length > 0) {
      throw new CliError(
        `--policy ${HARBOR_ORACLE} runs each task's solution/solve.sh, but ${missing.length} task(s) have none: ${missing.slice(0, 5).join(', ')}`,
      );
    }
  }
  for (const { task: t, sandbox } of suite) {
    if (sandbox === 'docker')
      process.stderr.write(`crl: ${t.name} runs on docker in ${describeTaskImage(t, imagePresentSync)}\n`);
    const note =
      sandbox === 'bwrap'
        ? t.config.environment.allow_internet === true
          ? 'the bwrap sandbox has no network'
          : null
        : taskNetwork(t).note;
    if (note)
      process.stderr.write(
        `crl: note: ${t.name} allows internet, but ${note.replace(/^the task allows internet, but /, '')}\n`,
      );
  }
  return suite;
}

/** Episode i: task i mod T, its seed the task's index (built when its wave starts, run.ts). */
export function harborEpisode(options: { tasks: readonly SuiteTask[]; index: number; policy: string }): EpisodeSpec {
  const { tasks, index: i, policy } = options;
  const index = i % tasks.length;
  const { task, sandbox } = tasks[index]!;
  return {
    episodeId: `harbor-${task.name}-${i}`,
    env: new HarborEnv({ task, exposeSolution: policy === HARBOR_ORACLE, sandbox: sandboxBackend(sandbox) }),
    seed: index,
  };
}

/** The harbor-oracle and harbor-nop policies as samplers (null for any other --policy). */
export function harborPolicySampler(options: {
  policy: string;
  tokenizer: ChatTemplateSource;
  seed: number;
  /** The layout's tools format: the scripted policies then write bash and submit calls. */
  agent?: AgentProtocol | null;
}): TokenSampler | null {
  const nop: TextPolicy = () => SUBMIT;
  const policy = options.policy === HARBOR_ORACLE ? harborOraclePolicy : options.policy === HARBOR_NOP ? nop : null;
  if (!policy) return null;
  return textPolicySampler({
    tokenizer: options.tokenizer,
    policy,
    rng: new Rng(mixSeed(options.seed, 1)),
    agent: options.agent,
  });
}

/** Harbor tasks have no scripted summary writers: only the policy itself, null or a checkpoint. */
/**
 * The expert of a task set is Harbor's oracle agent, which runs solution/solve.sh: without
 * exposeSolution it would fail every task, so crl train --actor expert and crl eval --policy
 * expert refuse it up front.
 */
export function checkHarborExpert(options: { env: string; knobs: Record<string, unknown>; flag: string }): void {
  if (isHarborEnv(options.env) && options.knobs.exposeSolution !== true)
    throw new CliError(
      `${options.flag} expert on task folders is Harbor's oracle agent (it runs solution/solve.sh), which needs --knobs '{"exposeSolution":true}'`,
    );
}

export function checkHarborWriter(choice: SummaryWriterChoice): void {
  if (choice.kind === 'oracle' || choice.kind === 'lossy') {
    throw new CliError(
      `--summary-writer ${choice.kind}: Harbor task folders have no scripted summary writer; use self, null or checkpoint:PATH`,
    );
  }
}
