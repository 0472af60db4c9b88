import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

/**
 * A blocking request/response channel to a child process or a TCP server, framed as
 * docs/torch-trainer.md#protocol describes. TrainablePolicy / TrainableCritic (contracts/trainable.ts) are synchronous, so the
 * PPO update can call a model in another process without changing rl/: a worker thread owns the
 * child and its pipes, and the caller blocks in Atomics.wait (with a deadline, so a hung trainer
 * is an error, not a hang) until the worker has a reply or the child is gone.
 */
export interface Frame {
  header: Record<string, unknown>;
  buffers: Uint8Array[];
}

/** Where the frames go: a child's stdin / stdout, or a TCP connection to a listening trainer. */
export type PipeTarget = { command: readonly string[] } | { host: string; port: number };

/** Why the channel stopped answering: the child exited, never started, or missed a deadline. */
export class PipeClosedError extends Error {
  override name = 'PipeClosedError';
}

type WorkerMessage = { frame: Frame } | { dead: string; tail: string };

/**
 * The worker's body, plain JavaScript (a worker cannot load the project's TypeScript without the
 * loader). It spawns the child (or connects to the server), writes frames to its stdin (the
 * socket), parses frames from its stdout (the socket), keeps the tail of a child's stderr for
 * error messages (echoing it when asked), and posts each reply (or the end) to the caller's port,
 * then wakes the caller through the shared flag.
 */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const net = require('node:net');
const { port, flag, target, cwd, env, echo } = workerData;
const wake = new Int32Array(flag);
let dead = false;
const post = (msg) => {
  if (dead) return;
  if (msg.dead) dead = true;
  port.postMessage(msg);
  Atomics.store(wake, 0, 1);
  Atomics.notify(wake, 0);
};
let tail = '';
let input;
let output;
if (target.command) {
  const child = spawn(target.command[0], target.command.slice(1), { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr.on('data', (d) => { tail = (tail + d.toString('utf8')).slice(-4000); if (echo) process.stderr.write(d); });
  child.on('error', (e) => post({ dead: 'could not be started: ' + e.message, tail }));
  child.on('close', (code, signal) =>
    post({ dead: code !== null ? 'exited with code ' + code : 'was killed by ' + signal, tail }));
  input = child.stdin;
  output = child.stdout;
} else {
  const socket = net.connect({ host: target.host, port: target.port });
  socket.setNoDelay(true);
  socket.on('error', (e) => post({ dead: 'could not be reached: ' + e.message, tail }));
  socket.on('close', () => post({ dead: 'closed the connection', tail }));
  input = socket;
  output = socket;
}
input.on('error', () => {});
let chunks = [];
let have = 0;
const take = (n) => {
  const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, have);
  const out = new Uint8Array(all.subarray(0, n));
  chunks = have > n ? [all.subarray(n)] : [];
  have -= n;
  return out;
};
const peekU32 = () => (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, have)).readUInt32LE(0);
let header = null;
output.on('data', (d) => {
  chunks.push(d);
  have += d.length;
  for (;;) {
    if (header === null) {
      if (have < 4) return;
      const size = peekU32();
      if (have < 4 + size) return;
      take(4);
      header = JSON.parse(Buffer.from(take(size)).toString('utf8'));
    }
    const sizes = Array.isArray(header.buffers) ? header.buffers : [];
    if (have < sizes.reduce((a, b) => a + b, 0)) return;
    const buffers = sizes.map((n) => take(n));
    post({ frame: { header, buffers } });
    header = null;
  }
});
port.on('message', ({ header, buffers }) => {
  const h = Buffer.from(JSON.stringify({ ...header, buffers: buffers.map((b) => b.byteLength) }), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32LE(h.length, 0);
  input.write(len);
  input.write(h);
  for (const b of buffers) input.write(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
});
`;

export class SyncPipe {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly wake: Int32Array;
  private closedReason: string | null = null;
  private stderrTail = '';

  constructor(options: { target: PipeTarget; cwd?: string; env?: NodeJS.ProcessEnv; echoStderr?: boolean }) {
    const { target } = options;
    if ('command' in target && target.command.length === 0) throw new Error('the trainer command is empty');
    const flag = new SharedArrayBuffer(4);
    this.wake = new Int32Array(flag);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        port: port2,
        flag,
        target: 'command' in target ? { command: [...target.command] } : { host: target.host, port: target.port },
        cwd: options.cwd ?? process.cwd(),
        env: options.env ?? process.env,
        echo: options.echoStderr ?? false,
      },
      transferList: [port2],
      stderr: false,
    });
    // The child dies with its stdin when this process ends (a server sees its client go); neither
    // keeps this process alive.
    this.worker.unref();
  }

  /** The last lines the child wrote to stderr (for error messages; empty over TCP). */
  get stderr(): string {
    return this.stderrTail;
  }

  /** Sends one frame and blocks until its reply; throws PipeClosedError when none can come. */
  request(frame: Frame, timeoutMs: number): Frame {
    if (this.closedReason !== null) throw new PipeClosedError(this.closedReason);
    this.port.postMessage(frame);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      Atomics.store(this.wake, 0, 0);
      const got = receiveMessageOnPort(this.port);
      if (got) {
        const msg = got.message as WorkerMessage;
        if ('frame' in msg) return msg.frame;
        this.stderrTail = msg.tail;
        this.closedReason = msg.dead;
        throw new PipeClosedError(msg.dead);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        this.closedReason = `gave no answer within ${Math.round(timeoutMs / 1000)} s and was stopped`;
        void this.worker.terminate(); // closes the child's stdin (the trainer exits) or the socket
        throw new PipeClosedError(this.closedReason);
      }
      Atomics.wait(this.wake, 0, 0, left);
    }
  }

  /** Stops the worker (closing the child's stdin, which ends the trainer). */
  async close(): Promise<void> {
    this.closedReason ??= 'was closed';
    await this.worker.terminate();
  }
}
