import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';

/**
 * For tests that need a real Redis: true when Debian's `redis-server` is installed. When it is
 * not, the tests skip with a loud message, unless CRL_REQUIRE_REDIS=1 (CI sets it), which makes
 * them fail.
 */
export function redisAvailable(suite: string): boolean {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (r.status === 0) return true;
  const reason = r.error ? r.error.message : (r.stderr || `exit ${r.status}`).trim();
  if (process.env.CRL_REQUIRE_REDIS === '1')
    throw new Error(`${suite}: CRL_REQUIRE_REDIS=1 but redis-server cannot run: ${reason}`);
  process.stderr.write(
    `\n*** SKIPPED ${suite}: redis-server cannot run here (${reason}). ` +
      'These tests run rollout workers on a real queue; apt-get install redis-server, or set CRL_REQUIRE_REDIS=1 to make this a failure. ***\n\n',
  );
  return false;
}

/** A free loopback port (the OS picks it; another process could take it before we bind, which tests tolerate by retrying). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface RedisProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** SIGKILL: Redis dies with everything it held (no persistence). */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A throwaway redis-server on a loopback port, without persistence (a restart starts empty, the
 * worst case for the queue). Resolves once it accepts connections.
 */
export async function startRedis(options: { port?: number } = {}): Promise<RedisProcess> {
  const port = options.port ?? (await freePort());
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const exited = new Promise<void>((res) => child.once('exit', () => res()));
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`redis-server on port ${port} exited with ${code}: ${out}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      out += `${line}\n`;
      if (/Ready to accept connections/.test(line)) resolve();
    });
  });
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return { url: `redis://127.0.0.1:${port}`, port, child, kill: () => end('SIGKILL'), stop: () => end('SIGTERM') };
}
