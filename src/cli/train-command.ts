import { Option, type Command } from 'commander';
import { join } from 'node:path';
import { camelFlag, CONFIG_FLAGS, flagsToConfig } from '../config/config-flags.ts';
import { ConfigError } from '../config/config-error.ts';
import { loadTrainConfig, parseTrainConfig } from '../config/load-config.ts';
import type { TrainConfig } from '../config/train-config.ts';
import { readMetrics } from '../experiments/metrics-log.ts';
import { createProgress } from '../experiments/progress.ts';
import { createRunDir, newRunName, readRunConfig } from '../experiments/run-dir.ts';
import { train } from '../experiments/train-loop.ts';
import type { ActorKind } from '../experiments/trainer-models.ts';
import { CliError } from './errors.ts';

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
    const hint = (line: string) => {
      const flag = CONFIG_FLAGS.find((c) => line.startsWith(`${c.path.join('.')}:`));
      return flag ? `${line} (--${flag.flag})` : line;
    };
    throw new ConfigError(e.problems.map(hint), e.source);
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

/** What commander parses for `crl train`: the fixed options plus one string per config flag. */
interface TrainOptions extends Record<string, unknown> {
  actor: ActorKind;
  config?: string;
  out?: string;
  resume?: string;
}

export function registerTrainCommand(program: Command): void {
  const cmd = program
    .command('train')
    .description('train one system (CompactionRL, single-window PPO or broadcast) into a run directory')
    .option('--config <file.json>', 'TrainConfig JSON (flags override its keys)')
    .option('--out <dir>', 'run directory (default runs/<name>-<time>)')
    .option('--resume <run>', 'continue an interrupted run with its stored config');
  for (const f of CONFIG_FLAGS) cmd.option(`--${f.flag} <${f.kind === 'json' ? 'json' : 'value'}>`, f.help);
  cmd.addOption(actorOption());
  cmd.action(async (opts: TrainOptions) => {
    const actor = opts.actor;
    let runDir: string;
    let config: TrainConfig;
    if (opts.resume) {
      const given = CONFIG_FLAGS.filter((f) => opts[camelFlag(f.flag)] !== undefined).map((f) => `--${f.flag}`);
      if (opts.config || given.length) {
        const drop = [...(opts.config ? ['--config'] : []), ...given].join(', ');
        throw new CliError(`--resume continues a run with its stored config; drop ${drop}`);
      }
      const resume = opts.resume;
      const stored = asUserError(() => readRunConfig(resume));
      runDir = stored.paths.root;
      config = parseTrainConfig(stored.config, stored.paths.config);
    } else {
      config = withFlagNames(() =>
        loadTrainConfig({
          ...(opts.config ? { file: opts.config } : {}),
          overrides: asUserError(() => flagsToConfig(opts)),
        }),
      );
      runDir = opts.out ?? join('runs', newRunName(config.name));
      asUserError(() => createRunDir({ dir: runDir, system: config.name, config }));
    }
    await train({ runDir, config, actor, progress: createProgress({ label: config.name }) });
    const last = readMetrics(join(runDir, 'metrics.jsonl')).pop();
    process.stdout.write(
      `${JSON.stringify({ runDir, iteration: last?.iteration ?? 0, successRate: last?.metrics['rollout/success_rate'] ?? null })}\n`,
    );
  });
}
