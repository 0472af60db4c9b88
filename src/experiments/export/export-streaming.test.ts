import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../../model/network/config.ts';
import { exportGguf, namedWeights, writeGgufExport, type GgufPrecision } from '../../model/formats/gguf-export.ts';
import { writeRandomHfModel } from '../../model/formats/hf-generate.ts';
import { loadHfModel } from '../../model/formats/hf-import.ts';
import { writeHfDir } from '../../model/formats/hf-test-helpers.ts';
import { MODEL_SHAPES } from '../../model/network/model-shapes.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { scrambleWeights, TEST_OPTIM } from '../../model/network/test-helpers.ts';
import { Rng } from '../../util/random.ts';
import { VOCAB } from '../../words/vocab.ts';
import { exportPolicy, loadPolicyWeights } from './export-policy.ts';

/**
 * A Hugging Face directory exports without being loaded: its tensors are read from the files a
 * chunk at a time and converted (BF16 straight to F16) as the GGUF file is written. The file must
 * be byte for byte the one the in-memory path writes from the loaded model.
 */
const root = join(tmpdir(), 'export-streaming');
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function streamedAndInMemory(dir: string, precision: GgufPrecision): Promise<[Buffer, Buffer]> {
  const lazy = await loadPolicyWeights(dir);
  const out = join(root, `${precision}-${dir.split('/').pop()}.gguf`);
  const parts = { cfg: lazy.cfg, vocab: {}, precision, name: 'same' };
  const bytes = writeGgufExport(out, { ...parts, weights: lazy.weights });
  const { policy } = await loadHfModel(dir);
  const inMemory = exportGguf({ ...parts, weights: namedWeights(policy.net) });
  const streamed = readFileSync(out);
  expect(bytes).toBe(streamed.length);
  return [streamed, inMemory];
}

describe('GGUF export streamed from a Hugging Face directory', () => {
  it('a generated Qwen3-shaped BF16 model: the same bytes as exporting the loaded model, f16 and f32', async () => {
    const dir = join(root, 'qwen3-tiny');
    writeRandomHfModel({ dir, cfg: MODEL_SHAPES['qwen3-tiny'], seed: 3 });
    for (const precision of ['f16', 'f32'] as const) {
      const [streamed, inMemory] = await streamedAndInMemory(dir, precision);
      expect(streamed.equals(inMemory)).toBe(true);
    }
  });

  it('a Llama-architecture F32 model in two shards (q/k rows reordered for llama.cpp): the same bytes', async () => {
    const p = new PolicyModel({
      config: modelConfig('tiny', { vocabSize: VOCAB.length, nHeads: 4, nKvHeads: 2 }),
      optim: TEST_OPTIM,
      rng: new Rng(5),
    });
    scrambleWeights(p.net, 6);
    const dir = writeHfDir({ root, policy: p, dtype: 'F32', shards: 2, name: 'llama-f32' });
    for (const precision of ['f16', 'f32'] as const) {
      const [streamed, inMemory] = await streamedAndInMemory(dir, precision);
      expect(streamed.equals(inMemory)).toBe(true);
    }
  });

  it('refuses a BF16 or F16 tensor holding NaN, naming it, and leaves no file', async () => {
    for (const dtype of ['BF16', 'F16'] as const) {
      const config = modelConfig('tiny', { vocabSize: VOCAB.length });
      const p = new PolicyModel({ config, optim: TEST_OPTIM, rng: new Rng(7) });
      const spec = p.net.specs.find((s) => s.name.endsWith('layers.1.mlp.down_proj.weight'))!;
      p.net.params[spec.offset + 3] = NaN;
      const dir = writeHfDir({ root, policy: p, dtype, shards: 1, name: `nan-${dtype}` });
      const out = join(root, `nan-${dtype}.gguf`);
      await expect(exportPolicy({ policy: dir, format: 'gguf', out, precision: 'f16' })).rejects.toThrow(
        /tensor model\.layers\.1\.mlp\.down_proj\.weight holds 1 non-finite values/,
      );
      expect(() => readFileSync(out)).toThrow(/ENOENT/);
    }
  });
});
