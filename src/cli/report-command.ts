import type { Command } from 'commander';
import { join } from 'node:path';
import { writeReport } from '../report/write-report.ts';

export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description('write one self-contained HTML report and a markdown file from run or pipeline directories')
    .argument('<runs...>', 'run directories and/or `crl reproduce` directories')
    .option('--out <dir>', 'output directory (default <first run>/report)')
    .option('--title <text>', 'report title')
    .option('--training-windows <K>', 'K used in training (the "x4" column)', '4')
    .action(async (runs: string[], opts: { out?: string; title?: string; trainingWindows: string }) => {
      const outDir = opts.out ?? join(runs[0]!, 'report');
      const r = await writeReport({
        runDirs: runs,
        outDir,
        ...(opts.title ? { title: opts.title } : {}),
        trainingWindows: Number(opts.trainingWindows),
      });
      for (const w of r.warnings) process.stderr.write(`crl: warning: ${w}\n`);
      process.stdout.write(`${JSON.stringify({ html: r.html, markdown: r.markdown, warnings: r.warnings.length })}\n`);
    });
}
