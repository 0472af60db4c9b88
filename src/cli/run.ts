import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { SHELL_TOOLS } from '../env/action-tools.ts';
import { tokenizerForPolicy } from '../experiments/evaluate/policy-source.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { overFamilySizes, resolveRolloutConfig, RolloutConfigError } from '../rollout/config.ts';
import type { EpisodeSpec } from '../rollout/episode.ts';
import { CliError } from './errors.ts';
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
import type { RunSummary } from './run-summary.ts';
import { runAndWrite } from './run-waves.ts';

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
