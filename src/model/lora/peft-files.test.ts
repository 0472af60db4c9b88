import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { openSafetensors } from '../formats/safetensors.ts';
import { modelConfig } from '../network/config.ts';
import { PolicyModel } from '../network/policy.ts';
import { TEST_OPTIM } from '../network/test-helpers.ts';
import { baseWeightsHash } from './base-hash.ts';
import { LoraAdapter } from './lora-adapter.ts';
import { resolveLora } from './lora-config.ts';
import { loadPeftAdapter, PEFT_FILES, readPeftAdapterInfo, writePeftAdapter } from './peft-files.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-peft-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function adapter(seed: number) {
  const policy = new PolicyModel({ config: modelConfig('tiny'), optim: TEST_OPTIM, rng: new Rng(1) });
  const settings = resolveLora({ rank: 2, alpha: 5, targets: ['v_proj', 'up_proj'] });
  const lora = new LoraAdapter({ net: policy.net, settings, optim: TEST_OPTIM, rng: new Rng(seed) });
  return { policy, lora };
}

describe("PEFT's adapter files", () => {
  it("write PEFT's config and key names, and read back A, B, the moments and the base's hash", () => {
    const { policy, lora } = adapter(3);
    const rng = new Rng(4);
    for (const buf of [lora.params, lora.optimizer.state.m, lora.optimizer.state.v])
      for (let k = 0; k < buf.length; k++) buf[k] = rng.normal();
    lora.optimizer.state.step = 7;
    const hash = baseWeightsHash(policy.net.params);
    writePeftAdapter({ dir: root, lora, baseModel: '/models/base', baseSha256: hash });

    const config = JSON.parse(readFileSync(join(root, PEFT_FILES.config), 'utf8'));
    expect(config).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 2,
      lora_alpha: 5,
      target_modules: ['v_proj', 'up_proj'],
      base_model_name_or_path: '/models/base',
    });
    const file = openSafetensors(join(root, PEFT_FILES.model), 'adapter');
    const c = policy.config;
    expect(file.tensors.get('base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight')?.shape).toEqual([
      2,
      c.dModel,
    ]);
    expect(file.tensors.get('base_model.model.model.layers.1.mlp.up_proj.lora_B.weight')?.shape).toEqual([
      c.mlpHidden,
      2,
    ]);
    expect(file.tensors.size).toBe(c.nLayers * 2 * 2);

    const info = readPeftAdapterInfo(root);
    expect(info).toEqual({ settings: lora.settings, baseModel: '/models/base', baseSha256: hash });
    const other = adapter(9).lora;
    loadPeftAdapter({ dir: root, lora: other, optimizer: true });
    expect(other.params).toEqual(lora.params);
    expect(other.optimizer.state.m).toEqual(lora.optimizer.state.m);
    expect(other.optimizer.state.v).toEqual(lora.optimizer.state.v);
    expect(other.optimizer.state.step).toBe(7);
  });

  it('hash the weights: one changed float changes it', () => {
    const { policy } = adapter(3);
    const before = baseWeightsHash(policy.net.params);
    expect(baseWeightsHash(Float32Array.from(policy.net.params))).toBe(before);
    policy.net.params[policy.net.params.length - 1]! += 1e-3;
    expect(baseWeightsHash(policy.net.params)).not.toBe(before);
  });
});
