import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { z } from 'zod';
import { SandboxError } from '../sandbox-types.ts';
import type { SupervisorProcess } from '../shell-pipes.ts';
import { engine, engineError, engineHijack, text } from './engine-api.ts';
import { FrameSplitter } from './stream-frames.ts';

/**
 * A container whose first process is driven over its attached stdin, stdout and stderr, held as
 * a process (SupervisorProcess): what `docker run -i --rm` does, over the API. The container is
 * created with its stdin open once (StdinOnce) and removed when it ends (AutoRemove): when this
 * process dies, its connection closes, the container's stdin with it, the supervisor reads its
 * end and exits, and the daemon removes the container, so a killed `crl` leaves nothing running.
 */
export class AttachedContainer extends EventEmitter implements SupervisorProcess {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly stdin: Writable;
  readonly stdio: readonly (PassThrough | Writable)[];
  readonly pid = undefined;
  private ended = false;

  private constructor(
    readonly id: string,
    private readonly socket: Socket,
    head: Buffer,
  ) {
    super();
    const frames = new FrameSplitter((stream, payload) => {
      if (stream === 'stdout') this.stdout.write(payload);
      else this.stderr.write(payload);
    });
    this.stdin = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        if (this.ended) return done();
        socket.write(chunk, () => done());
      },
    });
    this.stdio = [this.stdin, this.stdout, this.stderr];
    socket.on('data', (d: Buffer) => frames.push(d));
    socket.on('error', () => undefined); // the close that follows says it
    socket.on('close', () => {
      this.ended = true;
      this.stdout.end();
      this.stderr.end();
      this.emit('exit', null, null);
    });
    if (head.length > 0) frames.push(head);
  }

  /**
   * Creates the container (`config` is the engine's create body, its labels included), attaches
   * to its streams before it starts (nothing it prints is missed), and starts it.
   */
  static async start(options: { name: string; config: Record<string, unknown> }): Promise<AttachedContainer> {
    const created = await engine({
      method: 'POST',
      path: '/containers/create',
      query: { name: options.name },
      body: options.config,
      timeoutMs: 120_000,
    });
    if (created.status !== 201) throw new SandboxError(`the sandbox did not start: ${text(created.body)}`);
    const { Id: id } = z.object({ Id: z.string() }).parse(JSON.parse(created.body.toString('utf8')));
    try {
      const { socket, head } = await engineHijack({
        method: 'POST',
        path: `/containers/${id}/attach`,
        query: { stream: 1, stdin: 1, stdout: 1, stderr: 1 },
        timeoutMs: 60_000,
      });
      const container = new AttachedContainer(id, socket, head);
      const start = { method: 'POST', path: `/containers/${id}/start`, timeoutMs: 120_000 } as const;
      const r = await engine(start);
      if (r.status !== 204 && r.status !== 304) {
        container.kill();
        throw new SandboxError(`the sandbox did not start: ${engineError(start, r).message}`);
      }
      return container;
    } catch (e) {
      // Created but never started: AutoRemove does not apply.
      await engine({ method: 'DELETE', path: `/containers/${id}`, query: { force: 1 } }).catch(() => undefined);
      throw e;
    }
  }

  /** Closes the connection: the container's stdin ends, and with it the supervisor. */
  kill(): boolean {
    this.socket.destroy();
    return true;
  }

  /** Whether the connection keeps this process alive (a spare waiting in the pool does not). */
  hold(held: boolean): void {
    if (held) this.socket.ref();
    else this.socket.unref();
  }
}
