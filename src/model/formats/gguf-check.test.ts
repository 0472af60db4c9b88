import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkGgufFile } from './gguf-check.ts';
import { encodeGguf, kv, type GgmlTensorType } from './gguf-file.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-gguf-check-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

function file(bytes: Uint8Array): string {
  const p = join(root, `f${n++}.gguf`);
  writeFileSync(p, bytes);
  return p;
}

function gguf(values: number[], type: GgmlTensorType = 'F32'): Buffer {
  return encodeGguf({
    metadata: {
      'general.architecture': kv.str('llama'),
      'tokenizer.ggml.tokens': kv.strs(['a', 'b', 'c']),
      'llama.block_count': kv.u32(1),
    },
    tensors: [
      { name: 'a.weight', shape: [2, 2], data: Float32Array.from([1, 2, 3, 4]), type: 'F32' },
      { name: 'b.weight', shape: [values.length], data: Float32Array.from(values), type },
    ],
  });
}

describe('GGUF files are checked before llama.cpp loads them', () => {
  it('passes a well-formed file and counts its tensors and key/values', () => {
    expect(checkGgufFile(file(gguf([0.5, -1, 2])))).toEqual({ version: 3, tensors: 2, keys: 3 });
    expect(checkGgufFile(file(gguf([0.5, -1, 2], 'F16'))).tensors).toBe(2);
  });

  it('refuses NaN or infinite weights, naming the tensor', () => {
    expect(() => checkGgufFile(file(gguf([0.5, NaN, 2])))).toThrow(/tensor b\.weight \(F32\) holds non-finite values/);
    expect(() => checkGgufFile(file(gguf([Infinity], 'F16')))).toThrow(/tensor b\.weight \(F16\) holds non-finite/);
  });

  it('checks header counts against the bytes left before looping over them', () => {
    const good = gguf([1, 2]);
    const patched = (offset: number, value: bigint): Buffer => {
      const b = Buffer.from(good);
      b.writeBigUInt64LE(value, offset);
      return b;
    };
    // magic 0..4, version 4..8, tensor_count 8..16, kv_count 16..24, then the first key's length.
    expect(() => checkGgufFile(file(patched(8, 2n ** 40n)))).toThrow(
      /tensor_count is 1099511627776, but only \d+ bytes are left/,
    );
    expect(() => checkGgufFile(file(patched(16, 2n ** 40n)))).toThrow(/kv_count is \d+, but only/);
    expect(() => checkGgufFile(file(patched(24, 2n ** 33n)))).toThrow(/key 0 length is 8589934592, but only/);
    expect(() => checkGgufFile(file(patched(8, 2n ** 63n)))).toThrow(
      /tensor_count is 9223372036854775808, more than any file holds/,
    );
    expect(() => checkGgufFile(file(good.subarray(0, good.length - 32)))).toThrow(
      /b\.weight's data .* runs past the end/,
    );
    expect(() => checkGgufFile(file(Buffer.from('GGML1234')))).toThrow(/does not start with "GGUF"/);
  });

  it('bounds array lengths by the bytes left', () => {
    const b = Buffer.from(gguf([1]));
    // The tokens array: key string, type 9, element type 8, then its u64 length.
    const key = b.indexOf('tokenizer.ggml.tokens');
    b.writeBigUInt64LE(2n ** 50n, key + 'tokenizer.ggml.tokens'.length + 8);
    expect(() => checkGgufFile(file(b))).toThrow(
      /tokenizer\.ggml\.tokens's array length is 1125899906842624, but only/,
    );
  });
});
