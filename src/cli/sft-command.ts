import type { Command } from 'commander';
import { join } from 'node:path';
import { formatConfigIssues, withFlagHint } from '../config/config-error.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { createProgress, SFT_FIELDS } from '../experiments/runs/progress.ts';
import { newRunName, readRunConfig, runDirState } from '../experiments/runs/run-dir.ts';
import { runSft } from '../experiments/sft/sft.ts';
import { SftConfigSchema, type SftConfig } from '../experiments/sft/sft-config.ts';
import { configDifferences } from '../config/config-diff.ts';
import { isHarborEnv } from '../env/harbor/task-set.ts';
import { AGENT_FORMAT_HELP, THINKING_HELP } from './run-flags.ts';
import { CliError } from './errors.ts';
import { checkTask } from './load-envs.ts';
import { asUserError } from './train-command.ts';
import { parseJsonFlag } from './json-flag.ts';
import { readPolicyTokenizer } from '../model/formats/load-policy.ts';

/** The flag that sets each SFT config path, so a refused value names what the user typed. */
const SFT_FLAGS = Object.entries({
  'env.name': 'env',
  'env.knobs': 'knobs',
  episodes: 'episodes',
  epochs: 'epochs',
  data: 'data',
  mix: 'mix',
  lossyP: 'lossy-p',
  lossyGoalP: 'lossy-goal-p',
  slipP: 'slip-p',
  lr: 'lr',
  warmupSteps: 'warmup',
  'dense.steps': 'dense-steps',
  dense: 'dense',
  batchTokens: 'batch-tokens',
  heldOutEpisodes: 'held-out',
  'faults.retries': 'fault-retries',
  'faults.maxFraction': 'max-faults',
  'model.preset': 'model',
  'model.init': 'init',
  'rollout.contextWindow': 'context',
  'rollout.agentFormat': 'agent-format',
  'rollout.thinking': 'thinking',
  tokenizer: 'tokenizer',
  seed: 'seed',
}).map(([path, flag]) => ({ path: path.split('.'), flag }));

export function registerSftCommand(program: Command): void {
  program
    .command('sft')
    .description(
      'train the SFT base policy on expert episodes with lossy(p) summaries (cross-entropy on generated tokens)',
    )
    .option('--env <name>', 'task family (default kv-ledger)')
    .option('--knobs <json>', 'task knobs as JSON, e.g. \'{"queries":1}\'')
    .option('--episodes <n>', 'expert episodes per epoch')
    .option('--epochs <n>', 'epochs (fresh episodes each epoch unless --data fixed)')
    .option('--data <mode>', 'fresh (new training seeds every epoch) | fixed (the same episodes every epoch)')
    .option(
      '--mix <json>',
      'per-family shares of episodes with extra knobs, e.g. \'{"kv-ledger":[{"share":0.45,"knobs":{"chunks":1}}]}\'',
    )
    .option('--lossy-p <p>', 'summary fact-drop probability of the lossy writer')
    .option('--lossy-goal-p <p>', 'goal-clause drop probability of the lossy writer (default: half of --lossy-p)')
    .option(
      '--slip-p <p>',
      "probability that the demonstrator's final decision goes wrong (a wrong value in the answer; default 0: the expert)",
    )
    .option('--lr <x>', 'peak learning rate (linear warm-up, then cosine)')
    .option('--warmup <steps>', 'warm-up optimizer steps')
    .option('--batch-tokens <n>', 'tokens per optimizer step')
    .option('--dense-steps <n>', 'dense warm-up optimizer steps before the episode SFT (0: none; docs/sft.md)')
    .option(
      '--dense <json>',
      'dense warm-up settings as JSON, e.g. \'{"steps":3000,"recallSteps":300,"recallBatch":128}\' (keys: steps, recallSteps, recallMinAcc, recallMaxSteps, recallBatch, batch, lr, maxChunks, probes, summaryShare, evalEvery, replay; docs/sft.md)',
    )
    .option(
      '--fault-retries <n>',
      'times an expert episode that ended in a fault (a sandbox that did not start) runs again before it is left out of the data (default 1; docs/faults.md)',
    )
    .option(
      '--max-faults <share>',
      "stop when more than this share (0..1) of an epoch's expert episodes are left out as faults (default 0.5)",
    )
    .option('--held-out <n>', 'expert episodes on evaluation seeds for held-out token accuracy (0: skip)')
    .option('--model <preset>', 'model preset')
    .option(
      '--init <dir>',
      'start from these weights: a checkpoint or a Hugging Face model directory (instead of --model)',
    )
    .option('--context <C>', 'context window C')
    .option('--agent-format <format>', AGENT_FORMAT_HELP)
    .option('--thinking <on|off>', THINKING_HELP)
    .option(
      '--tokenizer <name|dir>',
      "word | qwen3 | a directory with tokenizer.json (+ tokenizer_config.json / chat_template.jinja); default: the --init model's own (a Hugging Face directory's tokenizer.json), else word",
    )
    .option('--seed <s>', 'seed')
    .option('--out <dir>', 'run directory (default runs/base-<time>); an existing one is resumed')
    .option(
      '--no-tensorboard',
      'write no TensorBoard event files (default: events.out.tfevents.* in the run directory; docs/tensorboard.md); when resuming, for the resumed part',
    )
    .action(async (options: Record<string, string | boolean | undefined>) => {
      // --no-tensorboard is commander's only boolean here (true unless given); the rest are strings.
      const { tensorboard, ...o } = options as Record<string, string | undefined> & { tensorboard: boolean };
      const num = (x: string | undefined) => (x === undefined ? undefined : Number.isFinite(Number(x)) ? Number(x) : x);
      const raw = Object.fromEntries(
        Object.entries({
          env: { name: o.env, ...(o.knobs ? { knobs: parseJsonFlag(o.knobs, '--knobs') } : {}) },
          episodes: num(o.episodes),
          epochs: num(o.epochs),
          data: o.data,
          mix: o.mix ? parseJsonFlag(o.mix, '--mix') : undefined,
          lossyP: num(o.lossyP),
          lossyGoalP: num(o.lossyGoalP),
          slipP: num(o.slipP),
          lr: num(o.lr),
          warmupSteps: num(o.warmup),
          dense:
            o.dense || o.denseSteps
              ? {
                  ...(o.dense ? (parseJsonFlag(o.dense, '--dense') as object) : {}),
                  ...(o.denseSteps ? { steps: num(o.denseSteps) } : {}),
                }
              : undefined,
          batchTokens: num(o.batchTokens),
          heldOutEpisodes: num(o.heldOut),
          faults:
            o.faultRetries || o.maxFaults
              ? {
                  ...(o.faultRetries ? { retries: num(o.faultRetries) } : {}),
                  ...(o.maxFaults ? { maxFraction: num(o.maxFaults) } : {}),
                }
              : undefined,
          model:
            o.model || o.init
              ? { ...(o.model ? { preset: o.model } : {}), ...(o.init ? { init: o.init } : {}) }
              : undefined,
          rollout:
            o.context || o.agentFormat || o.thinking
              ? {
                  ...(o.context ? { contextWindow: num(o.context) } : {}),
                  ...(o.agentFormat ? { agentFormat: o.agentFormat } : {}),
                  ...(o.thinking
                    ? { thinking: o.thinking === 'on' ? true : o.thinking === 'off' ? false : o.thinking }
                    : {}),
                }
              : undefined,
          seed: num(o.seed),
          // Default: the tokenizer the --init weights speak (a Hugging Face directory's own).
          tokenizer: o.tokenizer ?? (o.init ? (await readPolicyTokenizer(o.init)).name : undefined),
        }).filter(([, v]) => v !== undefined),
      );
      const r = SftConfigSchema.safeParse(raw);
      if (!r.success)
        throw new CliError(
          `invalid sft settings:\n  - ${formatConfigIssues(r.error.issues, SftConfigSchema)
            .map((l) => withFlagHint(l, SFT_FLAGS))
            .join('\n  - ')}`,
        );
      const runDir = o.out ?? join('runs', newRunName('base'));
      const resumed = resumableConfig({
        runDir,
        config: r.data,
        flagsGiven: Object.entries(o).some(([k, v]) => k !== 'out' && v !== undefined),
      });
      const config: SftConfig = tensorboard ? resumed : { ...resumed, tensorboard: false };
      if (isHarborEnv(config.env.name))
        throw new CliError(
          `crl sft learns from a task family's scripted expert, and task folders (${config.env.name}) have none: ` +
            'train the base on a family (e.g. --env shell-ledger), then crl train --env harbor:PATH --init <that run>',
        );
      checkTask({ env: config.env.name, knobs: config.env.knobs });
      // runSft creates the run directory only once the config and every input have loaded.
      const { checkpoint } = await runSft({
        runDir,
        config,
        progress: createProgress({ label: 'sft', fields: SFT_FIELDS }),
        log: (l) => process.stderr.write(`${l}\n`),
      });
      const last = readMetrics(join(runDir, 'metrics.jsonl')).pop();
      process.stdout.write(
        `${JSON.stringify({
          runDir,
          checkpoint,
          loss: last?.metrics['sft/loss'] ?? null,
          tokenAccuracy: last?.metrics['sft/token_acc_p50'] ?? null,
          heldOut: Object.fromEntries(Object.entries(last?.metrics ?? {}).filter(([k]) => k.startsWith('heldout/'))),
        })}\n`,
      );
    });
}

/**
 * An existing --out is resumed: with its stored config when no setting is given, or when the
 * settings given resolve to the same config; different settings are refused with the difference.
 */
function resumableConfig(options: { runDir: string; config: SftConfig; flagsGiven: boolean }): SftConfig {
  const { runDir } = options;
  const state = runDirState(runDir);
  if (state === 'other')
    throw new CliError(`--out ${runDir} exists and is not an empty directory or an SFT run; choose another --out`);
  if (state !== 'run') return options.config;
  const stored = asUserError(() => readRunConfig(runDir));
  if (stored.system !== 'base')
    throw new CliError(`--out ${runDir} holds a ${stored.system} run, not an SFT run; choose another --out`);
  const parsed = SftConfigSchema.safeParse(stored.config);
  if (!parsed.success)
    throw new CliError(`${stored.paths.config} is not a valid SFT config; choose another --out (or repair the file)`);
  if (!options.flagsGiven) {
    process.stderr.write(`crl: resuming ${runDir} with its stored config\n`);
    return parsed.data;
  }
  // Whether event files are written is no setting of the run's: --no-tensorboard may come and go.
  const { tensorboard: _stored, ...storedSettings } = parsed.data;
  const { tensorboard: _given, ...givenSettings } = options.config;
  const diff = configDifferences(storedSettings, givenSettings);
  if (diff.length > 0)
    throw new CliError(
      `--out ${runDir} holds an SFT run with other settings:\n  - ${diff.join('\n  - ')}\n` +
        'Give the same settings (or none) to resume it, or choose another --out for a new run.',
    );
  return parsed.data;
}
