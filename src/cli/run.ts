import { SingleBar } from 'cli-progress';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { SHELL_TOOLS } from '../env/action-tools.ts';
import { withStepDelay } from '../env/step-delay.ts';
import { tokenizerForPolicy } from '../experiments/evaluate/policy-source.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import type { ChatLayout } from '../rollout/chat-layout.ts';
import { overFamilySizes, resolveRolloutConfig, RolloutConfigError, type RolloutConfig } from '../rollout/config.ts';
import type { EpisodeSpec } from '../rollout/episode.ts';
import type { TokenSampler } from '../contracts/index.ts';
import { AtomicLineWriter } from '../util/atomic-write.ts';
import { recordLine } from '../rollout/record-file.ts';
import { runEpisodes } from '../rollout/runner.ts';
import { CliError, InterruptedError } from './errors.ts';
import {
  checkHarborWriter,
  HARBOR_ROLLOUT_DEFAULTS,
  harborEpisode,
  harborPolicySampler,
  isHarborEnv,
  loadHarborSuite,
} from './harbor-run.ts';
import { parseKnobsFlag } from './json-flag.ts';
import { checkTask } from './load-envs.ts';
import { evalTaskSeeds } from '../experiments/evaluate/eval-runner.ts';
import { FORCE_HELP, prepareOutputFile } from './outputs.ts';
import { runSamplers } from './run-samplers.ts';
import { AGENT_FORMAT_HELP, parseRunFlags, PRECISION_HELP, THINKING_HELP, type RunFlags } from './run-flags.ts';
import { RunTally, type RunSummary } from './run-summary.ts';

/**
 * Episodes are built and run in waves of at most this many: an environment (a sandbox, a task
 * state) exists only while its wave runs, so `--episodes` of any size runs in bounded memory.
 */
export const EPISODE_WAVE = 1024;

export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('run a policy with compaction on N tasks and write one JSONL record per episode')
    .requiredOption('--env <name>', 'registered task family, or harbor:PATH (a Harbor task folder or a folder of them)')
    .option(
      '--policy <expert|dir|engine:url|llamacpp:file>',
      'the family expert, a checkpoint directory, a run directory (its latest checkpoint), a remote engine: vllm:URL or sglang:URL (e.g. one `crl serve` started), a GGUF file run by llama.cpp: llamacpp:FILE.gguf (crl export), or for task folders harbor-oracle (runs solution/solve.sh) or harbor-nop (submits at once)',
      'expert',
    )
    .option('--knobs <json>', 'task knobs as JSON, e.g. \'{"queries":1,"keys":4}\' (default: the family defaults)')
    .option('--episodes <n>', 'number of tasks', '8')
    .option('--windows <K>', 'context windows per episode (K - 1 compactions)', '4')
    .option('--context <C>', 'context window C in tokens (default 256)')
    .option('--threshold <T>', 'compaction threshold T_comp (default 112)')
    .option('--tail <k>', 'whole steps carried into the rebuilt window (default 2)')
    .option('--max-action-tokens <n>', "longest action in tokens (default: the family's, 384 for task folders)")
    .option(
      '--max-observation-tokens <n>',
      "longest observation kept in tokens (default: the family's, 1024 for task folders)",
    )
    .option('--summary-max-tokens <n>', "longest summary in tokens (default: the family's, 512 for task folders)")
    .option('--seed <s>', 'offset into the eval seed range; also seeds the samplers', '0')
    .option(
      '--summary-writer <w>',
      'self | oracle | null | lossy:P | lossy:P:G (G: goal-drop probability, default P/2) | checkpoint:PATH | llamacpp:FILE.gguf',
      'self',
    )
    .option(
      '--tokenizer <name|dir>',
      "word (the built-in vocabulary) | qwen3 | a directory with tokenizer.json (+ tokenizer_config.json / chat_template.jinja); default: the checkpoint's own, else word",
    )
    .option(
      '--sandbox <auto|docker|bwrap>',
      'for task folders: docker builds environment/Dockerfile and runs each episode in a container (DOCKER_HOST names the daemon), bwrap runs folders without one (setup.sh), auto takes docker for a Dockerfile when a daemon answers, else bwrap',
      'auto',
    )
    .option('--concurrency <n>', 'episodes in flight at once (default: all)')
    .option(
      '--step-delay-ms <n>',
      'every environment step waits this many ms first (an I/O-bound setting for throughput measurements)',
    )
    .option('--temperature <t>', 'sampling temperature (default 1)')
    .option('--precision <auto|f32|f16|bf16>', PRECISION_HELP, 'auto')
    .option('--top-p <p>', 'nucleus sampling mass (default 1)')
    .option('--agent-format <format>', AGENT_FORMAT_HELP, 'text')
    .option('--thinking <on|off>', THINKING_HELP, 'off')
    .option(
      '--out <file.jsonl>',
      'where to write the episode records (written whole when the run succeeds; default: runs/run-<UTC time>.jsonl, named on stderr)',
    )
    .option('--force', FORCE_HELP)
    .action(async ({ force, ...opts }: Record<string, unknown>) => {
      // A bad --env or --knobs is reported before anything is created or named (runs/ included).
      if (typeof opts.env === 'string' && !isHarborEnv(opts.env))
        checkTask({ env: opts.env, knobs: parseKnobsFlag(opts.knobs as string | undefined) });
      // Without --out the records still land somewhere findable: a new file under runs/ (never replaced).
      const flags = parseRunFlags({ ...opts, out: opts.out ?? defaultRunOut() });
      flags.out = prepareOutputFile({ path: flags.out, force: force === true });
      const summary = await runCommand(flags);
      process.stdout.write(JSON.stringify(summary) + '\n');
    });
}

/** runs/run-20261205T135500Z.jsonl (a numeric suffix when that exists), relative to the working directory. */
function defaultRunOut(): string {
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  let path = join('runs', `run-${stamp}.jsonl`);
  for (let i = 2; existsSync(path); i++) path = join('runs', `run-${stamp}-${i}.jsonl`);
  process.stderr.write(`crl run: records go to ${path} (--out names another file)\n`);
  return path;
}

async function runCommand(flags: ReturnType<typeof parseRunFlags>): Promise<RunSummary> {
  if (isHarborEnv(flags.env)) return runHarborCommand(flags);
  const knobs = parseKnobsFlag(flags.knobs);
  const family = checkTask({ env: flags.env, knobs }); // validates the knobs once, before any episode
  // A family whose text needs another tokenizer names it (shell-ledger: qwen3); a checkpoint names its own.
  const given = flags.tokenizer ?? (checkpointPolicy(flags.policy) ? undefined : family.tokenizer);
  const tokenizer = await tokenizerForPolicy({ policy: flags.policy, flag: '--policy', ...(given ? { given } : {}) });
  const { config, layout } = resolveWithFlagNames(() =>
    resolveRolloutConfig({
      tokenizer,
      input: overFamilySizes(family.rollout, rolloutInput(flags)),
      tools: family.tools ?? null,
    }),
  );
  const { actor, summarizer } = await runSamplers({
    policy: flags.policy,
    actor: null,
    writer: flags.writer,
    family,
    tokenizer,
    seed: flags.seed,
    contextWindow: config.contextWindow,
    precision: flags.precision,
    agent: layout.agent,
  });
  const size = family.evalSeeds.end - family.evalSeeds.start;
  if (flags.episodes > size)
    process.stderr.write(
      `crl: warning: ${flags.episodes} episodes exceed the ${size} eval seeds of ${family.name}; seeds repeat\n`,
    );
  const episodeAt = (i: number): EpisodeSpec => {
    const seed = evalTaskSeeds(family, { tasks: 1, offset: flags.seed + i })[0]!;
    return { episodeId: `${family.name}-${seed}-${i}`, env: family.create(knobs), seed };
  };
  return runAndWrite({
    count: flags.episodes,
    episodeAt,
    config,
    layout,
    actor,
    summarizer,
    concurrency: flags.concurrency,
    stepDelayMs: flags.stepDelayMs,
    out: flags.out,
  });
}

/**
 * `--env harbor:PATH`: task folders in sandboxes. Shell output needs a subword tokenizer (Qwen3's),
 * and the rollout defaults are sized for commands and their output (HARBOR_ROLLOUT_DEFAULTS).
 */
async function runHarborCommand(flags: ReturnType<typeof parseRunFlags>): Promise<RunSummary> {
  if (flags.knobs !== undefined) throw new CliError('--knobs: task folders have no knobs');
  checkHarborWriter(flags.writer);
  const tasks = loadHarborSuite(flags.env, flags.policy, flags.sandbox);
  // Shell output needs a subword tokenizer: Qwen3's unless asked otherwise; a checkpoint names its own.
  const tokenizer = checkpointPolicy(flags.policy)
    ? await tokenizerForPolicy({ policy: flags.policy, ...(flags.tokenizer ? { given: flags.tokenizer } : {}) })
    : loadTokenizer(flags.tokenizer ?? 'qwen3');
  const { config, layout } = resolveWithFlagNames(() =>
    resolveRolloutConfig({
      tokenizer,
      input: overFamilySizes(HARBOR_ROLLOUT_DEFAULTS, rolloutInput(flags)),
      tools: SHELL_TOOLS,
    }),
  );
  const { actor, summarizer } = await runSamplers({
    policy: flags.policy,
    actor: harborPolicySampler({ policy: flags.policy, tokenizer, seed: flags.seed, agent: layout.agent }),
    writer: flags.writer,
    family: null,
    tokenizer,
    seed: flags.seed,
    contextWindow: config.contextWindow,
    precision: flags.precision,
    agent: layout.agent,
  });
  // Each episode holds a sandbox: a few at a time unless asked.
  return runAndWrite({
    count: flags.episodes,
    episodeAt: (i) => harborEpisode({ tasks, index: i, policy: flags.policy }),
    config,
    layout,
    actor,
    summarizer,
    concurrency: flags.concurrency ?? 4,
    stepDelayMs: flags.stepDelayMs,
    out: flags.out,
  });
}

/**
 * Runs the episodes in waves (EPISODE_WAVE), streaming each record to --out as it ends, with a
 * progress bar on stderr; the summary is tallied as records arrive.
 */
async function runAndWrite(options: {
  count: number;
  /** Episode i, built only when its wave starts. */
  episodeAt: (i: number) => EpisodeSpec;
  config: RolloutConfig;
  layout: ChatLayout;
  actor: TokenSampler;
  summarizer: TokenSampler;
  concurrency: number | undefined;
  /** Every environment step waits this long first (ms; env/step-delay.ts). */
  stepDelayMs: number;
  out: string;
}): Promise<RunSummary> {
  const { count, out } = options;
  const concurrency = Math.min(options.concurrency ?? EPISODE_WAVE, EPISODE_WAVE);
  if (options.concurrency !== undefined && options.concurrency > EPISODE_WAVE)
    process.stderr.write(
      `crl: note: --concurrency ${options.concurrency} is capped at ${EPISODE_WAVE} episodes in flight\n`,
    );
  // Records go to a partial file as episodes end and replace --out only when all have run.
  const writer = new AtomicLineWriter(out);
  const bar = new SingleBar({ stream: process.stderr, format: 'episodes {bar} {value}/{total} | pass {pass}' });
  bar.start(count, 0, { pass: 0 });
  const tally = new RunTally();
  // Ctrl-C / SIGTERM end the run through the runtime (every env closed, sandboxes removed) and
  // say where the records so far are, instead of the process dying silently.
  const stop = new AbortController();
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => stop.abort(new InterruptedError(signal));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (let start = 0; start < count; start += EPISODE_WAVE) {
      const size = Math.min(EPISODE_WAVE, count - start);
      await runEpisodes({
        signal: stop.signal,
        episodes: Array.from({ length: size }, (_, j) => {
          const e = options.episodeAt(start + j);
          return { ...e, env: withStepDelay(e.env, options.stepDelayMs) };
        }),
        config: options.config,
        layout: options.layout,
        actor: options.actor,
        summarizer: options.summarizer,
        concurrency,
        onEpisodeEnd: (rec) => {
          writer.append(recordLine(rec));
          tally.add(rec);
          bar.increment(1, { pass: tally.passes });
        },
      });
    }
    writer.commit();
  } catch (e) {
    bar.stop();
    writer.abort({ keepIfNonEmpty: true });
    const interrupted = e instanceof InterruptedError;
    if (writer.lines > 0)
      process.stderr.write(
        `crl: the run ${interrupted ? 'was interrupted' : 'failed'} after ${writer.lines} episodes; their records are in ${writer.partialPath} (${out} is unchanged)\n`,
      );
    else if (interrupted)
      process.stderr.write(`crl: the run was interrupted before any episode ended (${out} is unchanged)\n`);
    throw e;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  bar.stop();
  const summary = tally.summary();
  process.stderr.write(`crl: wrote ${summary.episodes} episode records to ${out}\n`);
  if (summary.envErrors > 0)
    process.stderr.write(
      `crl: warning: ${summary.envErrors} of ${summary.episodes} episodes ended in a fault, not the agent's doing (counted as failures in passAt1; by kind: ${faultKinds(summary.faults)}); the first: ${tally.firstEnvError}\n`,
    );
  return summary;
}

/** `sandbox 2, verifier 1`: the kinds that occurred. */
function faultKinds(faults: Readonly<Record<string, number>>): string {
  return Object.entries(faults)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}

/** Rollout config messages use config names; say which flag sets each. */
function resolveWithFlagNames<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof RolloutConfigError) {
      throw new CliError(
        `${e.message}\n(flags: --context sets contextWindow, --threshold compactThreshold, --tail tailSteps, --windows maxWindows, ` +
          '--max-action-tokens maxActionTokens, --max-observation-tokens maxObservationTokens, --summary-max-tokens summaryMaxTokens)',
      );
    }
    throw e;
  }
}

/** Only the flags the user gave override the rollout defaults. */
function rolloutInput(flags: RunFlags): Record<string, unknown> {
  const input: Record<string, unknown> = { maxWindows: flags.windows };
  if (flags.context !== undefined) input.contextWindow = flags.context;
  if (flags.threshold !== undefined) input.compactThreshold = flags.threshold;
  if (flags.tail !== undefined) input.tailSteps = flags.tail;
  if (flags.maxActionTokens !== undefined) input.maxActionTokens = flags.maxActionTokens;
  if (flags.maxObservationTokens !== undefined) input.maxObservationTokens = flags.maxObservationTokens;
  if (flags.summaryMaxTokens !== undefined) input.summaryMaxTokens = flags.summaryMaxTokens;
  if (flags.temperature !== undefined) input.temperature = flags.temperature;
  if (flags.topP !== undefined) input.topP = flags.topP;
  input.agentFormat = flags.agentFormat;
  input.thinking = flags.thinking === 'on';
  return input;
}

/** A checkpoint or run directory (not the expert, a scripted harbor policy or a remote engine). */
function checkpointPolicy(policy: string): boolean {
  return !['expert', 'harbor-oracle', 'harbor-nop'].includes(policy) && !/^(vllm|sglang|llamacpp):/.test(policy);
}
