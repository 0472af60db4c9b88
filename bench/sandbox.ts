/**
 * Sandbox costs: how long a sandbox takes to start (bwrap, namespaces, the supervisor's READY)
 * and to close, and the round trip of one command in the persistent shell compared with
 * starting a fresh `bash -c` on the host. Run: `npm run bench:sandbox [-- --starts N --commands N]`.
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Sandbox } from '../src/sandbox/supervised-shell.ts';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const STARTS = arg('starts', 30);
const COMMANDS = arg('commands', 300);

const quantiles = (xs: number[]): string => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return `median ${q(0.5).toFixed(2)} ms, p90 ${q(0.9).toFixed(2)} ms, min ${s[0]!.toFixed(2)} ms (n=${s.length})`;
};

const dirs = [{ path: '/app', writable: true }];
const starts: number[] = [];
const closes: number[] = [];
for (let i = 0; i < STARTS; i++) {
  const t0 = performance.now();
  const s = await Sandbox.start({ dirs, workdir: '/app' });
  const t1 = performance.now();
  await s.close();
  starts.push(t1 - t0);
  closes.push(performance.now() - t1);
}
console.log(`sandbox start (to a ready shell): ${quantiles(starts)}`);
console.log(`sandbox close (kill + delete):    ${quantiles(closes)}`);

const s = await Sandbox.start({ dirs, workdir: '/app' });
const run = async (cmd: string): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < COMMANDS; i++) {
    const t0 = performance.now();
    await s.run(cmd);
    out.push(performance.now() - t0);
  }
  return out;
};
console.log(`command round trip, builtin (true):       ${quantiles(await run('true'))}`);
console.log(`command round trip, one process (/bin/true): ${quantiles(await run('/bin/true'))}`);
console.log(
  `command round trip, 10 kB of output:      ${quantiles(await run('head -c 10000 /dev/zero | tr "\\0" a'))}`,
);
await s.close();

const host: number[] = [];
for (let i = 0; i < COMMANDS; i++) {
  const t0 = performance.now();
  spawnSync('bash', ['-c', '/bin/true']);
  host.push(performance.now() - t0);
}
console.log(`for comparison, spawnSync('bash -c /bin/true') on the host: ${quantiles(host)}`);
