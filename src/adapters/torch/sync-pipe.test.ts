import { afterEach, describe, expect, it } from 'vitest';
import { PipeClosedError, SyncPipe } from './sync-pipe.ts';

/**
 * The channel against a real child process that speaks the frame format (docs/torch-trainer.md#protocol):
 * it echoes each frame's header and buffers back, so a frame that crosses in slices must come back
 * byte for byte. With `die` in a header it exits after reading that header, before the buffers.
 */
const ECHO_CHILD = `
let chunks = [];
let have = 0;
let header = null;
process.stdin.on('data', (d) => {
  chunks.push(d);
  have += d.length;
  for (;;) {
    // Joined only once a whole header or a whole frame is here (a join per chunk is quadratic).
    if (header === null) {
      if (have < 4) return;
      let all = Buffer.concat(chunks, have);
      const n = all.readUInt32LE(0);
      if (have < 4 + n) return;
      header = JSON.parse(all.subarray(4, 4 + n).toString('utf8'));
      if (header.die) process.exit(3);
      all = all.subarray(4 + n);
      chunks = [all];
      have = all.length;
    }
    const total = header.buffers.reduce((a, b) => a + b, 0);
    if (have < total) return;
    const all = Buffer.concat(chunks, have);
    const h = Buffer.from(JSON.stringify({ echo: header, buffers: header.buffers }));
    const len = Buffer.alloc(4);
    len.writeUInt32LE(h.length, 0);
    process.stdout.write(len);
    process.stdout.write(h);
    process.stdout.write(all.subarray(0, total));
    chunks = [all.subarray(total)];
    have -= total;
    header = null;
  }
});
`;

const pipes: SyncPipe[] = [];
afterEach(async () => {
  await Promise.all(pipes.splice(0).map((p) => p.close()));
});

function echoPipe(): SyncPipe {
  const pipe = new SyncPipe({ target: { command: [process.execPath, '-e', ECHO_CHILD] } });
  pipes.push(pipe);
  return pipe;
}

/** n bytes of a pattern that differs at every offset mod 251 (a slice out of place shows). */
function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 7 + seed) % 251;
  return b;
}

describe('SyncPipe', () => {
  it('carries small frames in one hop and leaves small Buffers usable', () => {
    const pipe = echoPipe();
    const reply = pipe.request({ header: { op: 'ping', n: 1 }, buffers: [pattern(10, 1), new Uint8Array(0)] }, 30_000);
    expect(reply.header.echo).toEqual({ op: 'ping', n: 1, buffers: [10, 0] });
    expect(Array.from(reply.buffers[0]!)).toEqual(Array.from(pattern(10, 1)));
    expect(reply.buffers[1]!.byteLength).toBe(0);
    // The frame's header went out as a Buffer made from a string; had its pool been transferred,
    // every small Buffer made since would read as detached.
    expect(Buffer.from('still here').toString()).toBe('still here');
  });

  it('sends a frame larger than its slices, views at odd offsets included, and gets it back byte for byte', () => {
    const pipe = echoPipe();
    const big = pattern(40_000_003, 5); // several 16 MiB slices and a ragged end
    const backing = pattern(1001, 9);
    const view = new Uint8Array(backing.buffer, 3, 997); // not at offset 0, not a multiple of 4
    for (let round = 0; round < 2; round++) {
      const reply = pipe.request({ header: { op: 'big', round }, buffers: [view, big, new Uint8Array(0)] }, 120_000);
      expect(reply.header.echo).toMatchObject({ op: 'big', round, buffers: [997, 40_000_003, 0] });
      expect(Buffer.compare(reply.buffers[0]!, view)).toBe(0);
      expect(Buffer.compare(reply.buffers[1]!, big)).toBe(0);
      // A reply's buffers are their own, aligned (torch-trainer reads them as float32 in place).
      expect(reply.buffers[1]!.byteOffset).toBe(0);
    }
    // The caller's buffers are untouched (slices are copies; nothing of theirs was transferred).
    expect(big.byteLength).toBe(40_000_003);
    expect(big[12_345]).toBe((12_345 * 7 + 5) % 251);
  });

  it('is a PipeClosedError, not a hang, when the child exits in the middle of a large frame', () => {
    const pipe = echoPipe();
    const call = () => pipe.request({ header: { op: 'x', die: true }, buffers: [pattern(50_000_000, 2)] }, 120_000);
    expect(call).toThrow(PipeClosedError);
    expect(call).toThrow(/exited with code 3|closed/);
  });
});
