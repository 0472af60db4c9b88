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
const post = (msg, transfer) => {
  if (dead) return;
  if (msg.dead) {
    dead = true;
    // A caller waiting for a write to drain wakes too, and finds the channel gone.
    Atomics.add(wake, 1, 1);
    Atomics.notify(wake, 1);
  }
  port.postMessage(msg, transfer);
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
  // Once connected, an error (EPIPE, ECONNRESET: a write after the trainer ended its side) means
  // the same as the close that follows it; which of the two comes first is a race.
  let connected = false;
  socket.on('connect', () => { connected = true; });
  socket.on('error', (e) =>
    post({ dead: connected ? 'closed the connection' : 'could not be reached: ' + e.message, tail }));
  socket.on('close', () => post({ dead: 'closed the connection', tail }));
  input = socket;
  output = socket;
}
input.on('error', () => {});
// Incoming frames: [u32 header length][header JSON][buffers], parsed as the bytes arrive. Each
// buffer is allocated once at its size from the header and filled in place, then handed to the
// caller by transfer, so a reply of N bytes costs N bytes here, not a copy per step.
let pending = []; // bytes of the length word or header not yet complete
let pendingLen = 0;
let need = 4;
let inHeader = false; // reading the header's JSON (else its length word)
let header = null;
let sizes = [];
let bufs = [];
let index = 0;
let filled = 0;
const takePending = () => {
  const all = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingLen);
  pending = [];
  pendingLen = 0;
  return all;
};
const finishFrame = () => {
  post({ frame: { header, buffers: bufs } }, bufs.map((b) => b.buffer));
  header = null;
};
const startBody = () => {
  sizes = Array.isArray(header.buffers) ? header.buffers : [];
  bufs = sizes.map((n) => new Uint8Array(n));
  index = 0;
  filled = 0;
  while (index < sizes.length && sizes[index] === 0) index++;
  if (index === sizes.length) finishFrame();
};
output.on('data', (d) => {
  let at = 0;
  while (at < d.length) {
    if (header === null) {
      const n = Math.min(need - pendingLen, d.length - at);
      pending.push(d.subarray(at, at + n));
      pendingLen += n;
      at += n;
      if (pendingLen < need) return;
      const bytes = takePending();
      if (!inHeader) {
        need = bytes.readUInt32LE(0);
        inHeader = true;
        continue;
      }
      inHeader = false;
      need = 4;
      header = JSON.parse(bytes.toString('utf8'));
      startBody();
      continue;
    }
    const n = Math.min(sizes[index] - filled, d.length - at);
    bufs[index].set(d.subarray(at, at + n), filled);
    filled += n;
    at += n;
    if (filled === sizes[index]) {
      index++;
      filled = 0;
      while (index < sizes.length && sizes[index] === 0) index++;
      if (index === sizes.length) finishFrame();
    }
  }
});
// Outgoing: the caller posts a frame's header, then its buffers in slices it made for the purpose
// (transferred, not cloned), and waits for each slice's write to drain before it sends many more
// (the 'drained' counter in the shared flag), so a frame of several GB never sits here whole.
port.on('message', ({ bytes }) => {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    const last = i === bytes.length - 1;
    input.write(Buffer.from(b.buffer, b.byteOffset, b.byteLength), last ? () => {
      Atomics.add(wake, 1, 1);
      Atomics.notify(wake, 1);
    } : undefined);
  }
});
`;

/** The largest piece of a frame handed to the worker at once, and how many may wait unwritten. */
const SLICE_BYTES = 16 << 20;
const IN_FLIGHT = 4;

export class SyncPipe {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly wake: Int32Array;
  private closedReason: string | null = null;
  private stderrTail = '';
  /** Slices drained before the frame being sent (flag[1] counts them over the channel's life). */
  private drainedBase = 0;
  /** A message the worker posted while a frame was still being sent, for request() to read. */
  private early: { message: WorkerMessage } | undefined;

  constructor(options: { target: PipeTarget; cwd?: string; env?: NodeJS.ProcessEnv; echoStderr?: boolean }) {
    const { target } = options;
    if ('command' in target && target.command.length === 0) throw new Error('the trainer command is empty');
    // [0]: a reply (or the end) is waiting; [1]: how many sent slices have drained into the pipe.
    const flag = new SharedArrayBuffer(8);
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
    const deadline = Date.now() + timeoutMs;
    this.send(frame, deadline, timeoutMs);
    for (;;) {
      Atomics.store(this.wake, 0, 0);
      const got = this.early ?? receiveMessageOnPort(this.port);
      this.early = undefined;
      if (got) {
        const msg = got.message as WorkerMessage;
        if ('frame' in msg) return msg.frame;
        this.stderrTail = msg.tail;
        this.closedReason = msg.dead;
        throw new PipeClosedError(msg.dead);
      }
      this.waitOrStop(0, 0, deadline, timeoutMs);
    }
  }

  /**
   * Hands the frame to the worker: the header, then the buffers in slices of at most SLICE_BYTES,
   * each a copy made here and transferred, with at most IN_FLIGHT slices not yet written to the
   * pipe. A structured clone would copy each whole buffer (and the whole ArrayBuffer under a
   * view) into the worker at once: 7 GB more for a 0.6B policy's weights and AdamW moments.
   */
  private send(frame: Frame, deadline: number, timeoutMs: number): void {
    const sizes = frame.buffers.map((b) => b.byteLength);
    const head = Buffer.from(JSON.stringify({ ...frame.header, buffers: sizes }), 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32LE(head.length, 0);
    const total = sizes.reduce((a, b) => a + b, 0);
    if (total <= SLICE_BYTES) {
      // One message: small frames (every call of an update but init and pull) stay one hop.
      // Copies of their own (new Uint8Array, slice): transferring a Buffer from Node's shared pool
      // would detach the pool under every other small Buffer of this process.
      const bytes = [
        new Uint8Array(len),
        new Uint8Array(head),
        ...frame.buffers.map((b) => copyOf(b, 0, b.byteLength)),
      ];
      this.port.postMessage(
        { bytes },
        bytes.map((b) => b.buffer as ArrayBuffer),
      );
      return;
    }
    let sent = 0;
    // Waits until at most `unwritten` of the slices sent so far are not yet in the pipe (or the
    // channel ended: request() reads the end next and throws).
    const drainTo = (unwritten: number): void => {
      while (sent - (Atomics.load(this.wake, 1) - this.drainedBase) > unwritten && !this.peekDead())
        this.waitOrStop(1, Atomics.load(this.wake, 1), deadline, timeoutMs);
    };
    const post = (bytes: Uint8Array[]): void => {
      this.port.postMessage(
        { bytes },
        bytes.map((b) => b.buffer as ArrayBuffer),
      );
      sent++;
      drainTo(IN_FLIGHT);
    };
    post([new Uint8Array(len), new Uint8Array(head)]);
    for (const b of frame.buffers)
      for (let o = 0; o < b.byteLength; o += SLICE_BYTES) post([copyOf(b, o, Math.min(b.byteLength, o + SLICE_BYTES))]);
    drainTo(0);
    // Later frames count their slices from here.
    this.drainedBase += sent;
  }

  /** True when the worker has posted the channel's end (kept for request() to read). */
  private peekDead(): boolean {
    if (this.early) return 'dead' in this.early.message;
    const got = receiveMessageOnPort(this.port);
    if (!got) return false;
    this.early = got;
    return 'dead' in this.early.message;
  }

  /** Waits on flag[i] while it reads `seen`, or stops the worker at the deadline. */
  private waitOrStop(i: 0 | 1, seen: number, deadline: number, timeoutMs: number): void {
    const left = deadline - Date.now();
    if (left <= 0) {
      this.closedReason = `gave no answer within ${Math.round(timeoutMs / 1000)} s and was stopped`;
      void this.worker.terminate(); // closes the child's stdin (the trainer exits) or the socket
      throw new PipeClosedError(this.closedReason);
    }
    Atomics.wait(this.wake, i, seen, left);
  }

  /** Stops the worker (closing the child's stdin, which ends the trainer). */
  async close(): Promise<void> {
    this.closedReason ??= 'was closed';
    await this.worker.terminate();
  }
}

/** bytes [start, end) of b in an ArrayBuffer of their own (a Buffer's slice() would share). */
function copyOf(b: Uint8Array, start: number, end: number): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset + start, end - start).slice();
}
