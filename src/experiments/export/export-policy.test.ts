import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../../model/network/config.ts';
import { writeHfDir } from '../../model/formats/hf-test-helpers.ts';
import { loadPolicyDir } from '../../model/formats/load-policy.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { scrambleWeights, TEST_OPTIM } from '../../model/network/test-helpers.ts';
import { VOCAB } from '../../words/vocab.ts';
import { Rng } from '../../util/random.ts';
import { exportPolicy } from './export-policy.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-export-policy-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const QWEN3_LIKE = { vocabSize: VOCAB.length, dModel: 32, nHeads: 4, nKvHeads: 2, headDim: 16, qkNorm: true };

describe('exportPolicy architectures', () => {
  it('a q/k norm model is qwen3 in GGUF and Qwen3ForCausalLM in a Hugging Face directory, which loads back', async () => {
    const p = new PolicyModel({ config: modelConfig('tiny', QWEN3_LIKE), optim: TEST_OPTIM, rng: new Rng(1) });
    scrambleWeights(p.net, 2);
    const dir = writeHfDir({ root, policy: p, dtype: 'F32', shards: 1, name: 'qwen3-src' });
    const gguf = await exportPolicy({ policy: dir, format: 'gguf', out: join(root, 'q.gguf'), precision: 'f16' });
    expect(gguf).toMatchObject({ architecture: 'qwen3', tokenizer: 'word' });
    const out = join(root, 'q-hf');
    const hf = await exportPolicy({ policy: dir, format: 'hf', out, precision: 'f32' });
    expect(hf).toMatchObject({ architecture: 'Qwen3ForCausalLM', tokenizer: 'word' });
    const back = await loadPolicyDir(out);
    expect(back.policy.config).toEqual(p.config);
    expect(Array.from(back.policy.net.params)).toEqual(Array.from(p.net.params));
    expect(back.policy.vocab.tokenizer.name).toBe('word');
    expect(JSON.parse(readFileSync(join(out, 'crl_tokenizer.json'), 'utf8'))).toMatchObject({ name: 'word' });
  });

  it("refuses llama3 RoPE scaling on a q/k norm model for GGUF (llama.cpp's qwen3 reads no rope_freqs)", async () => {
    const ropeScaling = {
      type: 'llama3',
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositions: 16,
    } as const;
    const p = new PolicyModel({
      config: modelConfig('tiny', { ...QWEN3_LIKE, ropeScaling }),
      optim: TEST_OPTIM,
      rng: new Rng(3),
    });
    const dir = writeHfDir({
      root,
      policy: p,
      dtype: 'F32',
      shards: 1,
      name: 'qwen3-llama3',
      config: {
        rope_scaling: {
          rope_type: 'llama3',
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 16,
        },
      },
    });
    await expect(
      exportPolicy({ policy: dir, format: 'gguf', out: join(root, 'l3.gguf'), precision: 'f32' }),
    ).rejects.toThrow(/llama3 RoPE scaling .* qwen3 architecture/);
  });
});
