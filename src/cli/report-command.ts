import type { Command } from 'commander';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { collectReportData } from '../report/collect-runs.ts';
import { writeReport } from '../report/write-report.ts';
import { CliError } from './errors.ts';
import { FORCE_HELP, prepareOutputFiles } from './outputs.ts';

/** A whole number >= 1 from a flag, or a CliError saying what was expected. */
function wholeNumber(value: string, flag: string, what: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < 1)
    throw new CliError(`${flag}: expected a whole number >= 1 (${what}), got ${JSON.stringify(value)}`);
  return n;
}

export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description('write one self-contained HTML report and a markdown file from run or pipeline directories')
    .argument('<runs...>', 'run directories and/or `crl reproduce` directories')
    .option('--out <dir>', 'output directory (default <first run>/report)')
    .option('--title <text>', 'report title')
    .option('--training-windows <K>', 'K used in training (the "x4" column)', '4')
    .option('--context <C>', 'C of the standard evaluations (default: the smallest C evaluated)')
    .option(
      '--with-data',
      'copy the raw data (evaluation JSON, run configs, figure metrics, pipeline.json) to <out>/data and make the report from the copy, so that `crl report <out>/data --out <out>` regenerates it',
    )
    .option('--force', FORCE_HELP)
    .action(
      async (
        runs: string[],
        opts: {
          out?: string;
          title?: string;
          trainingWindows: string;
          context?: string;
          withData?: boolean;
          force?: boolean;
        },
      ) => {
        const K = wholeNumber(opts.trainingWindows, '--training-windows', 'the K used in training');
        const C = opts.context === undefined ? undefined : wholeNumber(opts.context, '--context', 'tokens');
        for (const r of runs) {
          let isDir = false;
          try {
            isDir = statSync(r).isDirectory();
          } catch {
            // reported below
          }
          if (!isDir) throw new CliError(`${r} is not a directory; name run directories or crl reproduce directories`);
        }
        const found = collectReportData(runs); // writeReport collects again, naming runs relative to --out
        if (found.curves.length === 0 && found.evals.length === 0)
          throw new CliError(
            `found no runs in ${runs.join(', ')}: no metrics.jsonl and no eval/*.json; ` +
              'name directories written by crl train, crl sft, crl eval or crl reproduce',
          );
        const outDir = prepareOutputFiles({
          dir: opts.out ?? join(runs[0]!, 'report'),
          files: ['report.html', 'report.md'],
          force: opts.force === true,
        });
        const r = await writeReport({
          runDirs: runs,
          outDir,
          ...(opts.title ? { title: opts.title } : {}),
          trainingWindows: K,
          contextWindow: C,
          withData: opts.withData ?? false,
        });
        for (const w of r.warnings) process.stderr.write(`crl: warning: ${w}\n`);
        process.stdout.write(
          `${JSON.stringify({ html: r.html, markdown: r.markdown, warnings: r.warnings.length })}\n`,
        );
      },
    );
}
