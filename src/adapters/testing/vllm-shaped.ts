import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

/** A running vllm-shaped-server.ts process (tests only). */
export interface VllmShaped {
  child: ChildProcess;
  url: string;
  /** Its access-log lines so far (one per request, uvicorn's form). */
  accessLog(): string[];
  stop(): void;
}

const SERVER = fileURLToPath(new URL('./vllm-shaped-server.ts', import.meta.url));

/** Starts a server shaped as vLLM's OpenAI-compatible one; `fail`: its first N completions answer HTTP 500. */
export function startVllmShaped(options: { fail?: number; vocab?: number } = {}): Promise<VllmShaped> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', SERVER, '--fail', String(options.fail ?? 0), '--vocab', String(options.vocab ?? 64)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const log: string[] = [];
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the vLLM-shaped server exited with ${code}: ${err}`)));
    const lines = createInterface({ input: child.stdout });
    let url: string | null = null;
    lines.on('line', (line) => {
      if (url !== null) return void log.push(line);
      url = (JSON.parse(line) as { url: string }).url;
      resolve({ child, url, accessLog: () => [...log], stop: () => child.kill('SIGTERM') });
    });
  });
}
