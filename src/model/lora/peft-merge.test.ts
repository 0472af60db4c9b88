import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { safetensorsChunks } from '../formats/safetensors.ts';
import { modelConfig } from '../network/config.ts';
import { PolicyModel } from '../network/policy.ts';
import { scrambleWeights, TEST_OPTIM } from '../network/test-helpers.ts';
import { baseWeightsHash } from './base-hash.ts';
import { LoraAdapter } from './lora-adapter.ts';
import { resolveLora } from './lora-config.ts';
import { AdapterMismatchError, AdapterNotFoundError, mergePeftWeights, readPeftWeights } from './peft-merge.ts';
import { PEFT_FILES, writePeftAdapter } from './peft-files.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-peft-merge-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A trained-looking adapter (B away from 0) on a scrambled base, saved in `dir` with its merge. */
function trained(dir: string, seed = 5, rank = 3) {
  mkdirSync(dir, { recursive: true });
  const policy = new PolicyModel({ config: modelConfig('tiny'), optim: TEST_OPTIM, rng: new Rng(1) });
  scrambleWeights(policy.net, 2);
  const base = Float32Array.from(policy.net.params);
  const settings = resolveLora({ rank, alpha: 7, targets: ['q_proj', 'v_proj', 'down_proj'] });
  const lora = new LoraAdapter({ net: policy.net, settings, optim: TEST_OPTIM, rng: new Rng(seed) });
  const rng = new Rng(seed + 1);
  for (const m of lora.matrices) lora.b(m).forEach((_, k, b) => (b[k] = 0.2 * rng.normal()));
  lora.merge();
  writePeftAdapter({ dir, lora, baseModel: '/models/base', baseSha256: baseWeightsHash(base), optimizer: false });
  return { policy, base, merged: Float32Array.from(policy.net.params) };
}

describe('a PEFT adapter served on its base', () => {
  it("merges to the trainer's merged weights bit for bit, and reads only A, B and the config", () => {
    const dir = join(root, 'ok');
    const { policy, base, merged } = trained(dir);
    const weights = readPeftWeights({ dir, net: policy.net, baseSha256: () => baseWeightsHash(base) });
    expect(weights.settings).toEqual({ rank: 3, alpha: 7, targets: ['q_proj', 'v_proj', 'down_proj'] });
    const into = new Float32Array(base.length);
    mergePeftWeights({ weights, base, into });
    expect(into).toEqual(merged);
    expect(readFileSync(join(dir, PEFT_FILES.config), 'utf8')).toContain('"r": 3');
  });

  it('refuses what does not fit: no adapter, another base, a rank the tensors do not have, extra tensors, rsLoRA', () => {
    const dir = join(root, 'bad');
    const { policy, base } = trained(dir);
    const read = (d = dir, hash = baseWeightsHash(base)) =>
      readPeftWeights({ dir: d, net: policy.net, baseSha256: () => hash });
    expect(() => read(join(root, 'nothing-here'))).toThrow(AdapterNotFoundError);
    expect(() => read(dir, 'f'.repeat(64))).toThrow(/trained on another base/);
    const config = JSON.parse(readFileSync(join(dir, PEFT_FILES.config), 'utf8'));
    writeFileSync(join(dir, PEFT_FILES.config), JSON.stringify({ ...config, r: 2 }));
    expect(() => read()).toThrow(/lora_A.weight is \[3, \d+\]; r 2 on the served model's q_proj .* needs \[2, \d+\]/);
    writeFileSync(join(dir, PEFT_FILES.config), JSON.stringify({ ...config, target_modules: ['q_proj', 'v_proj'] }));
    expect(() => read()).toThrow(/tensor\(s\) the served model has no place for/);
    writeFileSync(join(dir, PEFT_FILES.config), JSON.stringify({ ...config, use_rslora: true }));
    expect(() => read()).toThrow(AdapterMismatchError);
    expect(() => read()).toThrow(/use_rslora set/);
    writeFileSync(join(dir, PEFT_FILES.config), JSON.stringify(config));
    writeFileSync(
      join(dir, PEFT_FILES.model),
      Buffer.concat([...safetensorsChunks([{ name: 'x', shape: [1], data: new Float32Array([Number.NaN]) }], {})]),
    );
    expect(() => read()).toThrow(AdapterMismatchError);
    rmSync(join(dir, PEFT_FILES.model));
    expect(() => read()).toThrow(/holds adapter_config.json but no adapter_model.safetensors/);
  });
});
