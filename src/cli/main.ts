#!/usr/bin/env node
import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { kernelsDescription } from '../tensor/native.ts';
import { setCommandLine, setKernels } from '../util/provenance.ts';
import { reportError } from './errors.ts';
import { exitOnInterrupt } from './exit-on-interrupt.ts';
// One line per subcommand: import its register function here and call it below.
import { registerRunCommand } from './run.ts';
import { registerTrainCommand } from './train-command.ts';
import { registerEvalCommand } from './eval-command.ts';
import { registerReportCommand } from './report-command.ts';
import { registerReproduceCommand } from './reproduce-command.ts';
import { registerSftCommand } from './sft-command.ts';
import { registerServeCommand } from './serve-command.ts';
import { registerExportTasksCommand } from './export-tasks-command.ts';
import { registerViewCommand } from './view-command.ts';
import { registerExportCommand } from './export-command.ts';
import { registerWorkerCommand } from './worker-command.ts';

/** Builds the `crl` program with every registered subcommand. */
export function buildProgram(): Command {
  const program = new Command('crl')
    .description('CompactionRL: train and run long-horizon agents that compact their own context')
    .version(packageVersion(), '--version', 'print the version of crl')
    // Parse errors throw instead of exiting, so reportError maps them to exit 2 (docs/cli.md);
    // set before the subcommands are registered, which inherit it.
    .exitOverride()
    .showHelpAfterError("(add --help for this command's options)")
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  registerRunCommand(program);
  registerTrainCommand(program);
  registerEvalCommand(program);
  registerReportCommand(program);
  registerReproduceCommand(program);
  registerSftCommand(program);
  registerServeCommand(program);
  registerExportTasksCommand(program);
  registerViewCommand(program);
  registerExportCommand(program);
  registerWorkerCommand(program);
  return program;
}

/** Runs `crl` with process-style argv ([node, script, ...args]) and returns the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  // Provenance records the command as typed, without the interpreter and script paths.
  setCommandLine(['crl', ...argv.slice(2)]);
  setKernels(kernelsDescription());
  const uninstall = exitOnInterrupt(argv[2]);
  try {
    await buildProgram().parseAsync([...argv]);
    return 0;
  } catch (e) {
    return reportError(e);
  } finally {
    uninstall();
  }
}

// Run when executed directly (`node --import tsx src/cli/main.ts`); bin/crl and tests import it.
if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('cli/main.ts')) {
  process.exitCode = await runCli(process.argv);
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
