import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../model/network/config.ts';
import { encodeGguf, kv } from '../model/formats/gguf-file.ts';
import { writeHfDir } from '../model/formats/hf-test-helpers.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { Rng } from '../util/random.ts';
import { crlAsync, type CrlResult } from './testing/spawn-crl.ts';

/**
 * Corrupt model files through the real `crl` process: sizes no machine holds and non-finite or
 * impossible GGUF contents end in exit 2 naming the field, before anything is allocated.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-corrupt-models-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function expectRefusal(r: CrlResult, message: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\n\s+at |internal error/);
}

const policy = new PolicyModel({ config: modelConfig('tiny'), optim: DEFAULT_OPTIMIZER, rng: new Rng(1) });
const hfDir = (name: string, config: Record<string, unknown>) =>
  writeHfDir({ root, policy, dtype: 'F32', shards: 1, name, config });
const run = (policyArg: string, out: string) =>
  crlAsync(['run', '--env', 'kv-ledger', '--policy', policyArg, '--episodes', '1', '--out', join(root, out)], {
    timeoutMs: 60_000,
  });

function ggufFile(name: string, patch?: (b: Buffer) => void, value = 0.5): string {
  const b = encodeGguf({
    metadata: { 'general.architecture': kv.str('llama') },
    tensors: [{ name: 'w', shape: [2], data: Float32Array.from([1, value]), type: 'F32' }],
  });
  patch?.(b);
  const p = join(root, name);
  writeFileSync(p, b);
  return p;
}

describe.concurrent('corrupt model files (spawned crl)', { timeout: 120_000 }, () => {
  it('crl run --policy DIR: hidden_size 1e9, vocab_size 1e9 and num_hidden_layers 1e6 exit 2 naming the key', async () => {
    const [hidden, vocab, layers] = await Promise.all([
      run(hfDir('hidden', { hidden_size: 1_000_000_000 }), 'a.jsonl'),
      run(hfDir('vocab', { vocab_size: 1_000_000_000 }), 'b.jsonl'),
      run(hfDir('layers', { num_hidden_layers: 1_000_000 }), 'c.jsonl'),
    ]);
    expectRefusal(hidden, /hidden_size: must be at most 65536/);
    expectRefusal(vocab, /vocab_size: must be at most 4194304/);
    expectRefusal(layers, /num_hidden_layers: must be at most 1024/);
  });

  it('crl export: max_position_embeddings 1e12 exits 2 naming the key', async () => {
    const dir = hfDir('positions', { max_position_embeddings: 1e12 });
    const r = await crlAsync(['export', '--policy', dir, '--format', 'gguf', '--out', join(root, 'x.gguf')], {
      timeoutMs: 60_000,
    });
    expectRefusal(r, /max_position_embeddings: must be at most 16777216/);
  });

  it('crl run --policy llamacpp:FILE: NaN weights and a header claiming 2^40 tensors exit 2', async () => {
    const nan = ggufFile('nan.gguf', undefined, Number.NaN);
    const many = ggufFile('many.gguf', (b) => b.writeBigUInt64LE(2n ** 40n, 8));
    const [a, b] = await Promise.all([run(`llamacpp:${nan}`, 'n.jsonl'), run(`llamacpp:${many}`, 'm.jsonl')]);
    expectRefusal(a, /tensor w \(F32\) holds non-finite values/);
    expectRefusal(b, /tensor_count is 1099511627776, but only \d+ bytes are left/);
  });
});
