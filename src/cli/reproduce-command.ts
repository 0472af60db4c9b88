import type { Command } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getPreset, presetNames } from '../experiments/presets.ts';
import { reproduce } from '../experiments/reproduce.ts';
import { newRunName } from '../experiments/run-dir.ts';
import type { ActorKind } from '../experiments/trainer-models.ts';
import { RUN_FILES } from '../report/run-files.ts';
import { CliError } from './errors.ts';
import { actorOption, asUserError } from './train-command.ts';

export function registerReproduceCommand(program: Command): void {
  program
    .command('reproduce')
    .description('SFT base -> RL w/o compaction -> CompactionRL -> ablations -> broadcast -> eval all -> report; last line is the results JSON')
    .option('--preset <name>', `one of ${presetNames().join(', ')}`, 'quick')
    .option('--out <dir>', 'pipeline directory (default runs/reproduce-<preset>-<time>)')
    .option('--resume <dir>', 'continue an interrupted pipeline (its stored preset)')
    .addOption(actorOption())
    .action(async (opts: { preset: string; out?: string; resume?: string; actor: ActorKind }) => {
      let presetName = opts.preset;
      let outDir = opts.out ?? join('runs', newRunName(`reproduce-${presetName}`));
      if (opts.resume) {
        const file = join(opts.resume, RUN_FILES.pipeline);
        if (!existsSync(file)) throw new CliError(`${opts.resume} is not a reproduce directory (no ${RUN_FILES.pipeline})`);
        presetName = (JSON.parse(readFileSync(file, 'utf8')) as { preset: string }).preset;
        outDir = opts.resume;
      }
      const preset = asUserError(() => getPreset(presetName));
      if (opts.actor === 'expert') process.stderr.write('crl: warning: --actor expert: every system acts with the scripted expert; the numbers measure the expert, not trained policies\n');
      const summary = await reproduce({ preset, presetName, outDir, actor: opts.actor, log: (l) => process.stderr.write(`crl reproduce: ${l}\n`) });
      process.stdout.write(`${JSON.stringify(summary)}\n`);
    });
}
