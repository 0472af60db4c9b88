import { GeneratedFolderEnv } from '../harbor/generated-folder-env.ts';
import { generateShellLedger, type ShellLedgerTask } from './generate.ts';
import { shellLedgerKnobs, type ShellLedgerKnobs } from './knobs.ts';
import { writeTaskFolder } from './task-folder.ts';

/** shell-ledger as an Environment: its task folders run in the sandbox (generated-folder-env.ts). */
export class ShellLedgerEnv extends GeneratedFolderEnv<ShellLedgerTask, ShellLedgerKnobs> {
  constructor(knobs: Partial<ShellLedgerKnobs> = {}) {
    super(
      {
        name: 'shell-ledger',
        schema: shellLedgerKnobs,
        generate: generateShellLedger,
        writeTaskFolder,
        commandTimeoutSec: 20,
      },
      knobs,
    );
  }
}
