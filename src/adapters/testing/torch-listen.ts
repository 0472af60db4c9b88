import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from '../../util/testing/wait-for.ts';
import { CRL_TORCH_PYTHON_PATH, DEFAULT_TORCH_COMMAND } from '../torch/trainer-target.ts';

export interface ListeningTrainer {
  child: ChildProcess;
  /** The port it printed (`crl_torch: listening on 127.0.0.1:PORT`). */
  port: number;
  /** Its stderr so far. */
  stderr: () => string;
}

/**
 * Starts a trainer listening on a free loopback port (`... -m crl_torch --listen 127.0.0.1:0`, as on
 * a GPU machine) and resolves once it printed the port. The child is pushed on `children` first, so
 * the caller's afterAll stops it whatever happens here. Default: the repository's python/ on
 * Debian's python3; `command`, `env` and `cwd` start another python (an installed package).
 */
export async function listeningTrainer(
  children: ChildProcess[],
  options: { command?: readonly string[]; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<ListeningTrainer> {
  const [python, ...args] = options.command ?? DEFAULT_TORCH_COMMAND;
  const child = spawn(python!, [...args, '--listen', '127.0.0.1:0', '--threads', '1'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: options.env ?? { ...process.env, PYTHONPATH: CRL_TORCH_PYTHON_PATH },
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const port = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`the trainer exited with code ${child.exitCode}: ${stderr.trim()}`);
      return Number(/listening on 127\.0\.0\.1:(\d+)/.exec(stderr)?.[1] ?? 0);
    },
    { what: 'the trainer to print its port', timeoutMs: 120_000 },
  );
  return { child, port, stderr: () => stderr };
}
