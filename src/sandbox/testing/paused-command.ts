/**
 * Test child for paused-trainer.test.ts: starts a sandbox, says where its /app is on the host, runs
 * one command with the timeout given on argv, prints the result as one JSON line and exits. The
 * test stops this process (SIGSTOP) while the command runs and continues it after the deadline.
 */
import { Sandbox } from '../supervised-shell.ts';

const [command, timeoutMs] = [process.argv[2] ?? 'true', Number(process.argv[3] ?? 10_000)];
const s = await Sandbox.start({ dirs: [{ path: '/app', writable: true }], workdir: '/app' });
try {
  process.stdout.write(`${JSON.stringify({ app: s.hostPath('/app') })}\n`);
  const r = await s.run(command, { timeoutMs });
  process.stdout.write(`${JSON.stringify({ text: r.text, timedOut: r.timedOut, exitCode: r.exitCode })}\n`);
} finally {
  await s.close();
}
