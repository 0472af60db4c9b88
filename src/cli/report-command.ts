import type { Command } from 'commander';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { collectReportData } from '../report/collect-runs.ts';
import { writeReport } from '../report/write-report.ts';
import { CliError } from './errors.ts';
import { FORCE_HELP, prepareOutputFiles } from './outputs.ts';

export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description('write one self-contained HTML report and a markdown file from run or pipeline directories')
    .argument('<runs...>', 'run directories and/or `crl reproduce` directories')
    .option('--out <dir>', 'output directory (default <first run>/report)')
    .option('--title <text>', 'report title')
    .option('--training-windows <K>', 'K used in training (the "x4" column)', '4')
    .option('--force', FORCE_HELP)
    .action(
      async (runs: string[], opts: { out?: string; title?: string; trainingWindows: string; force?: boolean }) => {
        const k = Number(opts.trainingWindows);
        if (!/^\d+$/.test(opts.trainingWindows.trim()) || !Number.isInteger(k) || k < 1)
          throw new CliError(
            `--training-windows: expected a whole number of windows >= 1 (the K used in training), got ${JSON.stringify(opts.trainingWindows)}`,
          );
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
          trainingWindows: k,
        });
        for (const w of r.warnings) process.stderr.write(`crl: warning: ${w}\n`);
        process.stdout.write(
          `${JSON.stringify({ html: r.html, markdown: r.markdown, warnings: r.warnings.length })}\n`,
        );
      },
    );
}
