#!/usr/bin/env node
import { Command } from 'commander';
import { reportError } from './errors.ts';
// One line per subcommand: import its register function here and call it below.
import { registerRunCommand } from './run.ts';
import { registerTrainCommand } from './train-command.ts';
import { registerEvalCommand } from './eval-command.ts';
import { registerReportCommand } from './report-command.ts';
import { registerReproduceCommand } from './reproduce-command.ts';
import { registerSftCommand } from './sft-command.ts';
import { registerServeCommand } from './serve-command.ts';
import { registerViewCommand } from './view-command.ts';

/** Builds the `crl` program with every registered subcommand. */
export function buildProgram(): Command {
  const program = new Command('crl')
    .description('CompactionRL: train and run long-horizon agents that compact their own context')
    .showHelpAfterError()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  registerRunCommand(program);
  registerTrainCommand(program);
  registerEvalCommand(program);
  registerReportCommand(program);
  registerReproduceCommand(program);
  registerSftCommand(program);
  registerServeCommand(program);
  registerViewCommand(program);
  return program;
}

async function main(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv]);
    return 0;
  } catch (e) {
    return reportError(e);
  }
}

// Only run when executed directly (tests import buildProgram).
if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('cli/main.ts')) {
  process.exitCode = await main(process.argv);
}
