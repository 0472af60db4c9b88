import type { Readable } from 'node:stream';
import { z } from 'zod';
import { engine, engineHijack, engineJson } from './engine-api.ts';
import { FrameSplitter } from './stream-frames.ts';

/**
 * One process started in a running container by the engine (`docker exec` over the API): its own
 * pipes from the engine, its exit status from the engine (nothing inside the container can
 * answer for it). Output goes to callbacks as it comes; stdin, when given, is streamed in and
 * then closed. (A child process's stdout given as stdin must have a reader from the start, a
 * PassThrough: node drops what a child printed when it exits with no reader on its stdout.)
 */

export interface ExecResult {
  /** The engine's exit status; null when the stream was cut (timeout, cancel) or the engine did not say. */
  code: number | null;
  timedOut: boolean;
  cancelled: boolean;
  /** What the engine itself said on the stream (its own error, e.g. a program that cannot start). */
  system: string;
}

const CreatedSchema = z.object({ Id: z.string() });
const InspectSchema = z.object({ Running: z.boolean(), ExitCode: z.number().nullable() });

export async function engineExec(options: {
  container: string;
  cmd: readonly string[];
  workdir?: string | undefined;
  stdin?: Readable | Buffer | undefined;
  onStdout?: (d: Buffer) => void;
  onStderr?: (d: Buffer) => void;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}): Promise<ExecResult> {
  const { Id: id } = await engineJson(CreatedSchema, {
    method: 'POST',
    path: `/containers/${encodeURIComponent(options.container)}/exec`,
    body: {
      AttachStdin: options.stdin !== undefined,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Cmd: options.cmd,
      ...(options.workdir ? { WorkingDir: options.workdir } : {}),
    },
    timeoutMs: 60_000,
  });
  const { socket, head } = await engineHijack({
    method: 'POST',
    path: `/exec/${id}/start`,
    body: { Detach: false, Tty: false },
    timeoutMs: 60_000,
  });
  let system = '';
  const frames = new FrameSplitter((stream, payload) => {
    if (stream === 'stdout') options.onStdout?.(payload);
    else if (stream === 'stderr') options.onStderr?.(payload);
    else if (system.length < 4096) system += payload.toString('utf8');
  });
  let timedOut = false;
  let cancelled = false;
  const ended = new Promise<void>((resolve) => {
    socket.on('close', () => resolve());
    socket.on('error', () => undefined); // seen as the close that follows
  });
  socket.on('data', (d: Buffer) => frames.push(d));
  if (head.length > 0) frames.push(head);
  const stop = (): void => void socket.destroy();
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, options.timeoutMs);
  const onAbort = (): void => {
    cancelled = true;
    stop();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.stdin === undefined) socket.end();
  else if (Buffer.isBuffer(options.stdin)) socket.end(options.stdin);
  else {
    // Half-closing the connection is how the engine learns that stdin ended.
    options.stdin.on('error', () => socket.end());
    options.stdin.pipe(socket);
  }
  await ended;
  clearTimeout(timer);
  options.signal?.removeEventListener('abort', onAbort);
  if (timedOut || cancelled) return { code: null, timedOut, cancelled, system };
  return { code: await exitCode(id), timedOut, cancelled, system };
}

/** The exec's exit status; the engine may record it a moment after the stream ends. */
async function exitCode(id: string): Promise<number | null> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const r = await engine({ method: 'GET', path: `/exec/${id}/json`, timeoutMs: 60_000 });
    if (r.status !== 200) return null; // the container (and with it the exec) is gone
    const s = InspectSchema.safeParse(JSON.parse(r.body.toString('utf8')));
    if (!s.success) return null;
    if (!s.data.Running && s.data.ExitCode !== null) return s.data.ExitCode;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return null;
}
