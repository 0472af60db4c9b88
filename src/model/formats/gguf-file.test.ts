import { gguf } from '@huggingface/gguf';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeGguf, GGUF_ALIGNMENT, kv } from './gguf-file.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-gguf-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('GGUF encoding', () => {
  it('writes metadata, reversed dims, aligned offsets and f32/f16 data that a GGUF parser reads back', async () => {
    const a = Float32Array.from([1, 2, 3, 4, 5, 6]);
    const b = Float32Array.from([0.5, -2, 65504, 1 / 3, 0]);
    const buf = encodeGguf({
      metadata: {
        'general.architecture': kv.str('llama'),
        'llama.block_count': kv.u32(2),
        'llama.rope.freq_base': kv.f32(10000),
        'tokenizer.ggml.tokens': kv.strs(['▁a', '<b>', '\n']),
        'tokenizer.ggml.token_type': kv.i32s([1, 3, 1]),
        'tokenizer.ggml.add_bos_token': kv.bool(false),
      },
      tensors: [
        { name: 'a.weight', shape: [2, 3], data: a, type: 'F32' },
        { name: 'b.weight', shape: [5], data: b, type: 'F16' },
      ],
    });
    const path = join(root, 'x.gguf');
    writeFileSync(path, buf);
    const parsed = await gguf(path, { allowLocalFile: true });
    const { tensorInfos, tensorDataOffset } = parsed;
    const metadata = parsed.metadata as Record<string, unknown>;
    expect(metadata['general.architecture']).toBe('llama');
    expect(metadata['llama.block_count']).toBe(2);
    expect(metadata['tokenizer.ggml.tokens']).toEqual(['▁a', '<b>', '\n']);
    expect(metadata['tokenizer.ggml.add_bos_token']).toBe(false);
    expect(tensorInfos.map((t) => [t.name, t.shape.map(Number), t.dtype, Number(t.offset)])).toEqual([
      ['a.weight', [3, 2], 0, 0],
      ['b.weight', [5], 1, 32],
    ]);
    const start = Number(tensorDataOffset);
    expect(start % GGUF_ALIGNMENT).toBe(0);
    expect(Array.from({ length: 6 }, (_, i) => buf.readFloatLE(start + 4 * i))).toEqual([1, 2, 3, 4, 5, 6]);
    // Half floats, little-endian: 0.5 = 0x3800, -2 = 0xc000, 65504 = 0x7bff, 1/3 rounds to 0x3555.
    expect(Array.from({ length: 5 }, (_, i) => buf.readUInt16LE(start + 32 + 2 * i))).toEqual([
      0x3800, 0xc000, 0x7bff, 0x3555, 0,
    ]);
  });

  it('rejects data that does not fill its shape', () => {
    expect(() =>
      encodeGguf({ metadata: {}, tensors: [{ name: 'x', shape: [2, 2], data: new Float32Array(3), type: 'F32' }] }),
    ).toThrow(/holds 4 values, data has 3/);
  });
});
