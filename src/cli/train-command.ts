import { Option, type Command } from 'commander';
import { ADMIN_TOKEN_ENV } from '../adapters/engine-weights.ts';
import { join, resolve } from 'node:path';
import { camelFlag, CONFIG_FLAGS, flagsToConfig } from '../config/config-flags.ts';
import { ConfigError, withFlagHint } from '../config/config-error.ts';
import { loadTrainConfig, parseTrainConfig } from '../config/load-config.ts';
import type { TrainConfig } from '../config/train-config.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { createProgress } from '../experiments/runs/progress.ts';
import { latestCheckpoint } from '../experiments/runs/checkpoint-store.ts';
import { resolveCheckpointDir } from '../experiments/evaluate/policy-source.ts';
import { newRunName, readRunConfig, runDirState } from '../experiments/runs/run-dir.ts';
import { queueSampling } from '../experiments/rollout-queue/queue-sampling.ts';
import { train } from '../experiments/train/train-loop.ts';
import type { ActorKind } from '../experiments/train/trainer-models.ts';
import { CliError } from './errors.ts';
import { checkHarborExpert } from './harbor-run.ts';
import { checkTask } from './load-envs.ts';

/** Turns a plain Error from a user-caused problem into a CliError (message shown, no stack). */
export function asUserError<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof Error && e.name === 'Error') throw new CliError(e.message);
    throw e;
  }
}

/** Config problems name config paths; say which flag sets each (e.g. "batchEpisodes: ... (--batch)"). */
function withFlagNames<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new ConfigError(
      e.problems.map((l) => withFlagHint(l, CONFIG_FLAGS)),
      e.source,
    );
  }
}

export function actorOption(): Option {
  return new Option(
    '--actor <kind>',
    'who acts while training: the policy (real runs) or the scripted expert (plumbing smoke tests only)',
  )
    .choices(['policy', 'expert'])
    .default('policy');
}

/** Flags `--resume` accepts: where episodes run and engines answer, not what the run learns. */
const RESUME_FLAGS: readonly string[] = [
  'engine-url',
  'engine-lora',
  'queue',
  'queue-timeout',
  'step-delay-ms',
  'trainer-command',
  'trainer-procs',
  'trainer-url',
  'trainer-timeout',
];

/** Where the torch trainer is: on --resume, one of these given replaces all three stored. */
const TRAINER_PLACE_FLAGS: readonly string[] = ['trainer-command', 'trainer-procs', 'trainer-url'];

/** `over` laid onto `base`, objects merged key by key (flag overrides onto a stored config). */
function mergeDeep(base: unknown, over: unknown): unknown {
  if (typeof base !== 'object' || base === null || typeof over !== 'object' || over === null || Array.isArray(over))
    return over;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) out[k] = mergeDeep(out[k], v);
  return out;
}

/** What commander parses for `crl train`: the fixed options plus one string per config flag. */
interface TrainOptions extends Record<string, unknown> {
  actor: ActorKind;
  config?: string;
  out?: string;
  resume?: string;
  fromScratch?: boolean;
  /** False with --no-tensorboard. */
  tensorboard: boolean;
}

export function registerTrainCommand(program: Command): void {
  const cmd = program
    .command('train')
    .description('train one system (CompactionRL, single-window PPO or broadcast) into a run directory')
    .option('--config <file.json>', 'TrainConfig JSON (flags override its keys)')
    .option('--out <dir>', 'run directory (default runs/<name>-<time>)')
    .option('--resume <run>', 'continue an interrupted run with its stored config');
  for (const f of CONFIG_FLAGS) cmd.option(`--${f.flag} <${f.kind === 'json' ? 'json' : 'value'}>`, f.help);
  cmd.option(
    '--from-scratch',
    'allow RL from randomly initialized weights when no --init is given (smoke tests; it almost never learns these tasks)',
  );
  cmd.option(
    '--no-tensorboard',
    'write no TensorBoard event files (default: events.out.tfevents.* in the run directory; docs/tensorboard.md); with --resume, for the resumed part',
  );
  cmd.addOption(actorOption());
  cmd.action(async (opts: TrainOptions) => {
    let actor = opts.actor;
    let runDir: string;
    let config: TrainConfig;
    if (opts.resume) {
      const given = CONFIG_FLAGS.filter(
        (f) => opts[camelFlag(f.flag)] !== undefined && !RESUME_FLAGS.includes(f.flag),
      ).map((f) => `--${f.flag}`);
      if (opts.config || opts.out || given.length) {
        const drop = [...(opts.config ? ['--config'] : []), ...(opts.out ? ['--out'] : []), ...given].join(', ');
        throw new CliError(`--resume continues a run with its stored config; drop ${drop}`);
      }
      const resume = opts.resume;
      const stored = asUserError(() => readRunConfig(resume));
      runDir = stored.paths.root;
      // The run continues with whoever acted in it: a resumed expert smoke run stays one.
      if (cmd.getOptionValueSource('actor') === 'cli' && opts.actor !== stored.actor)
        throw new CliError(
          `${runDir} was trained with --actor ${stored.actor}; --resume keeps it: drop --actor ${opts.actor}`,
        );
      actor = stored.actor;
      if (stored.system === 'base')
        throw new CliError(
          `${runDir} holds an SFT run (crl sft), not an RL run: continue it with crl sft --out ${runDir}, or start RL from it with crl train --init ${runDir}`,
        );
      config = parseTrainConfig(stored.config, stored.paths.config);
      // Where the run's episodes and engines are may change between sessions (a restarted engine
      // on a new port, another queue); what the run learns may not.
      const moved = Object.fromEntries(RESUME_FLAGS.map((f) => [camelFlag(f), opts[camelFlag(f)]]));
      // A trainer given anew (command, processes or address) replaces the stored one whole.
      const trainerMoved = TRAINER_PLACE_FLAGS.some((f) => opts[camelFlag(f)] !== undefined);
      const base =
        trainerMoved && config.trainer
          ? { ...config, trainer: { kind: config.trainer.kind, timeoutSec: config.trainer.timeoutSec } }
          : config;
      if (Object.values(moved).some((v) => v !== undefined))
        config = withFlagNames(() =>
          parseTrainConfig(
            mergeDeep(
              base,
              asUserError(() => flagsToConfig(moved)),
            ),
            `${stored.paths.config} with flags`,
          ),
        );
      // Like the places above, the event files are the run's output, not what it learns.
      if (!opts.tensorboard) config = { ...config, tensorboard: false };
      const done = asUserError(() => latestCheckpoint(stored.paths.root))?.iteration ?? 0;
      if (done >= config.iterations) {
        process.stderr.write(
          `crl: ${runDir} already finished all ${config.iterations} iterations; nothing to resume (to train longer, start a new run with --init ${runDir})\n`,
        );
        printSummary(runDir);
        return;
      }
    } else {
      config = withFlagNames(() =>
        loadTrainConfig({
          ...(opts.config ? { file: opts.config } : {}),
          overrides: {
            ...asUserError(() => flagsToConfig(opts)),
            ...(opts.tensorboard ? {} : { tensorboard: false }),
          },
        }),
      );
      if (config.model.init && opts.fromScratch)
        throw new CliError('--init and --from-scratch contradict each other: drop --from-scratch to start from --init');
      runDir = opts.out ?? join('runs', newRunName(config.name));
      checkNewRunDir(runDir);
      checkTask({ env: config.env.name, knobs: config.env.knobs });
      if (actor === 'expert') checkHarborExpert({ env: config.env.name, knobs: config.env.knobs, flag: '--actor' });
      const init = config.model.init;
      if (init) {
        // A run directory stands for its latest checkpoint; the run stores the checkpoint itself.
        config = {
          ...config,
          model: { ...config.model, init: resolve(asUserError(() => resolveCheckpointDir(init))) },
        };
      } else if (!opts.fromScratch && actor === 'policy') {
        throw new CliError(
          'crl train needs a starting policy: pass --init <run or checkpoint directory> (train one with `crl sft`), ' +
            'or --from-scratch to start RL from random weights (a smoke test: it almost never learns these tasks)',
        );
      }
    }
    // train() creates the run directory only once the config and every input have loaded.
    const engineToken = process.env[ADMIN_TOKEN_ENV];
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const queue = config.queue ? await queueSampling({ config, actor, runDir, log }) : null;
    try {
      await train({
        runDir,
        config,
        actor,
        log,
        progress: createProgress({ label: config.name }),
        ...(engineToken ? { engineToken } : {}),
        ...(queue ? { wrapStages: queue.wrap } : {}),
      });
    } finally {
      await queue?.close();
    }
    printSummary(runDir);
  });
}

/** A new run's --out: absent or empty; an earlier run is continued with --resume instead. */
function checkNewRunDir(dir: string): void {
  const state = runDirState(dir);
  if (state === 'run')
    throw new CliError(`--out ${dir} already holds a run; continue it with --resume ${dir}, or choose another --out`);
  if (state === 'other')
    throw new CliError(`--out ${dir} exists and is not an empty directory; choose a new or empty directory`);
}

function printSummary(runDir: string): void {
  const last = readMetrics(join(runDir, 'metrics.jsonl')).pop();
  process.stdout.write(
    `${JSON.stringify({ runDir, iteration: last?.iteration ?? 0, successRate: last?.metrics['rollout/success_rate'] ?? null })}\n`,
  );
}
