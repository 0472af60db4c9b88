/**
 * The daemon's multiplexed stream (an attach or exec without a terminal): frames of an 8-byte
 * header (stream 1 stdout, 2 stderr, 3 the daemon's own error; three zero bytes; the payload's
 * length, big-endian) and the payload. FrameSplitter hands each payload to its stream's callback,
 * across chunk boundaries, without copying more than a partial header.
 */
export type FrameStream = 'stdout' | 'stderr' | 'system';

const STREAMS: Record<number, FrameStream> = { 1: 'stdout', 2: 'stderr', 3: 'system' };

export class FrameSplitter {
  private header = Buffer.alloc(0);
  /** Bytes left of the current frame's payload, and its stream. */
  private left = 0;
  private stream: FrameStream | null = null;

  constructor(private readonly on: (stream: FrameStream, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.left > 0) {
        const n = Math.min(this.left, chunk.length - at);
        if (this.stream !== null) this.on(this.stream, chunk.subarray(at, at + n));
        this.left -= n;
        at += n;
        continue;
      }
      const need = 8 - this.header.length;
      this.header = Buffer.concat([this.header, chunk.subarray(at, at + need)]);
      at += Math.min(need, chunk.length - at);
      if (this.header.length < 8) return;
      // An unknown stream's payload is skipped, not taken for another's.
      this.stream = STREAMS[this.header[0]!] ?? null;
      this.left = this.header.readUInt32BE(4);
      this.header = Buffer.alloc(0);
    }
  }
}
