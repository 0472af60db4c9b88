import { describe, expect, it } from 'vitest';
import { decodeEvent, encodeEvent, FILE_VERSION } from './event-proto.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('tensorflow.Event encoding', () => {
  it('writes the file-version event by field number: wall_time (1, double), file_version (3, string)', () => {
    // 0x09 = field 1 wire type 1 (64-bit), 1.5 as a little-endian double; 0x1a = field 3 wire type 2.
    expect(hex(encodeEvent({ wallTime: 1.5, step: 0, fileVersion: FILE_VERSION }))).toBe(
      `09000000000000f83f1a0d${Buffer.from('brain.Event:2').toString('hex')}`,
    );
  });

  it('writes a scalar as Summary.Value { tag = 1, simple_value = 2 (float32) } in summary = 5, step = 2', () => {
    const e = encodeEvent({ wallTime: 0.5, step: 3, values: [{ tag: 'a/b', scalar: 0 }] });
    // summary (0x2a, 12 bytes) holds one value (0x0a, 10 bytes): tag (0x0a "a/b"), simple_value (0x15, 4 bytes);
    // a zero is written, not left out: it is the value's oneof.
    expect(hex(e)).toBe(`09000000000000e03f1003` + `2a0c0a0a0a03612f6215` + `00000000`);
    expect(decodeEvent(e)).toEqual({ wallTime: 0.5, step: 3, values: [{ tag: 'a/b', scalar: 0 }] });
  });

  it('stores scalars as float32, as TensorBoard does', () => {
    const e = decodeEvent(encodeEvent({ wallTime: 1, step: 1, values: [{ tag: 'x/y', scalar: 0.1 }] }));
    expect(e.values[0]!.scalar).toBe(Math.fround(0.1));
  });

  it('writes text as a rank-0 DT_STRING tensor (8) with text-plugin metadata (9)', () => {
    const text = 'summary: *k* = 3 — ünïcode';
    const e = encodeEvent({ wallTime: 1, step: 2 ** 40, values: [{ tag: 'samples/episode_0', text }] });
    expect(decodeEvent(e)).toEqual({
      wallTime: 1,
      step: 2 ** 40,
      values: [{ tag: 'samples/episode_0', text, plugin: 'text' }],
    });
    const h = hex(e);
    expect(h).toContain('0807'); // dtype DT_STRING = 7
    expect(h).toContain(`0a04${Buffer.from('text').toString('hex')}`); // plugin_name "text"
  });
});
