import { InterruptedError, reportError } from './errors.ts';

/**
 * Commands that stop gracefully on Ctrl-C / SIGTERM by themselves: crl run (closes its
 * environments, keeps the finished records), and the long-lived worker, serve and view.
 */
const OWN_STOP = new Set(['run', 'worker', 'serve', 'view']);

/**
 * Ctrl-C / SIGTERM for every other command (sft, train, eval, reproduce, …): the process ends
 * through process.exit with 130 / 143, so its 'exit' handlers run and remove the sandbox roots and
 * generated task folders still open (src/sandbox/host-files.ts). Node's default action for the
 * two signals ends the process without running them, which left both in the temporary directory.
 * What a command keeps on disk (checkpoints, a pipeline's finished stages) is written as it goes,
 * and its `--resume` / existing `--out` continues from there. Returns the uninstaller.
 */
export function exitOnInterrupt(command: string | undefined): () => void {
  if (command === undefined || OWN_STOP.has(command)) return () => {};
  // reportError writes the one line every interrupted command writes and gives its exit code.
  const stop = (signal: 'SIGINT' | 'SIGTERM') => process.exit(reportError(new InterruptedError(signal)));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return () => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  };
}
