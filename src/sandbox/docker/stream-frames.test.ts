import { describe, expect, it } from 'vitest';
import { FrameSplitter, type FrameStream } from './stream-frames.ts';

const frame = (stream: number, text: string): Buffer => {
  const payload = Buffer.from(text);
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(payload.length, 4);
  return Buffer.concat([h, payload]);
};

function split(chunks: Buffer[]): [FrameStream, string][] {
  const out: [FrameStream, string][] = [];
  const s = new FrameSplitter((stream, p) => {
    const last = out[out.length - 1];
    if (last && last[0] === stream) last[1] += p.toString();
    else out.push([stream, p.toString()]);
  });
  for (const c of chunks) s.push(c);
  return out;
}

describe('FrameSplitter', () => {
  const whole = Buffer.concat([
    frame(1, 'out one'),
    frame(2, 'err'),
    frame(9, 'unknown'),
    frame(1, 'out two'),
    frame(3, 'oops'),
  ]);
  const expected: [FrameStream, string][] = [
    ['stdout', 'out one'],
    ['stderr', 'err'],
    ['stdout', 'out two'],
    ['system', 'oops'],
  ];

  it('splits frames given whole', () => {
    expect(split([whole])).toEqual(expected);
  });

  it('splits the same frames given a byte at a time, headers cut anywhere', () => {
    expect(split([...whole].map((b) => Buffer.from([b])))).toEqual(expected);
  });

  it('takes an empty payload as no output', () => {
    expect(split([frame(1, ''), frame(2, 'x')])).toEqual([['stderr', 'x']]);
  });
});
