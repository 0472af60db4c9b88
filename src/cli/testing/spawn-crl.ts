import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The real `crl` command of this checkout (bin/crl), as users run it. */
export const CRL_BIN = fileURLToPath(new URL('../../../bin/crl', import.meta.url));

export interface CrlResult {
  /** The exit code; null when the process was killed (it ran past `timeoutMs`). */
  code: number | null;
  stdout: string;
  /** stderr without the CRL_NATIVE=0 notice (see `withoutNativeNotice`). */
  stderr: string;
  /** The last line of stdout: the JSON summary most commands print. */
  last: string;
}

export interface CrlOptions {
  /** Working directory (default: the test's own, the repository root). */
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Killed after this long (default just under vitest's 120 s test timeout, so a slow machine fails with crl's stderr). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 110_000;

/**
 * Without native kernels (CRL_NATIVE=0, CI's second pass) every crl process prints one notice that
 * it uses the TypeScript kernels; tests that read stderr compare what the command itself says.
 */
export function withoutNativeNotice(stderr: string): string {
  return stderr.replace(/^compaction-rl: native kernels unavailable.*\n/m, '');
}

function result(code: number | null, stdout: string, stderr: string): CrlResult {
  return { code, stdout, stderr: withoutNativeNotice(stderr), last: stdout.trim().split('\n').pop() ?? '' };
}

/** Runs `crl args` to the end (synchronously). */
export function crl(args: readonly string[], options: CrlOptions = {}): CrlResult {
  const r = spawnSync(process.execPath, [CRL_BIN, ...args], {
    encoding: 'utf8',
    timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env } : {}),
  });
  return result(r.status, r.stdout ?? '', r.stderr ?? '');
}

/** Runs `crl args` asynchronously, so several commands of one test run side by side. */
export function crlAsync(args: readonly string[], options: CrlOptions = {}): Promise<CrlResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CRL_BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(options.env ? { env: options.env } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(result(code, stdout, stderr));
    });
  });
}
