import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../util/testing/wait-for.ts';
import { sandboxAvailable } from './testing/sandbox-available.ts';

const available = sandboxAvailable('paused trainer tests');
const CHILD = join(import.meta.dirname, 'testing', 'paused-command.ts');

describe.skipIf(!available)('a trainer paused while a command runs', () => {
  // A suspended VM or a job stopped with SIGSTOP resumes with its command timer past the deadline
  // and the command's reply waiting in the pipe. Node runs expired timers before it reads pipes,
  // so the timer must not decide before the waiting reply has been read.
  it('reads a reply that arrived during the pause instead of calling the command timed out', async () => {
    const timeoutMs = 3000;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, 'touch started; sleep 1; touch finished; echo done', String(timeoutMs)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const app = await waitFor(
        () => (out.includes('\n') ? (JSON.parse(out.split('\n')[0]!) as { app: string }).app : null),
        {
          what: "the child's sandbox",
          timeoutMs: 60_000,
        },
      );
      await waitFor(() => existsSync(join(app, 'started')), { what: 'the command to start', timeoutMs: 30_000 });
      const stoppedAt = Date.now();
      process.kill(child.pid!, 'SIGSTOP');
      // The sandbox's processes live in their own session and keep running: the command ends
      // during the pause, and the pause outlasts the command's deadline.
      await waitFor(() => existsSync(join(app, 'finished')), { what: 'the command to finish', timeoutMs: 30_000 });
      await waitFor(() => Date.now() - stoppedAt > timeoutMs + 500, {
        what: 'the deadline to pass',
        timeoutMs: 30_000,
      });
      process.kill(child.pid!, 'SIGCONT');
      expect(await exited).toBe(0);
      const result = JSON.parse(out.trim().split('\n')[1]!) as { text: string; timedOut: boolean; exitCode: number };
      expect(result).toEqual({ text: 'done\n', timedOut: false, exitCode: 0 });
    } finally {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
  }, 120_000);
});
