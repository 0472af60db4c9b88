import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tinyCheckpoint } from '../adapters/testing/crl-serve.ts';
import { latestCheckpoint } from '../experiments/runs/checkpoint-store.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { openSafetensors, readTensorInto, type SafetensorsFile } from '../model/formats/safetensors.ts';
import { crl } from './testing/spawn-crl.ts';

/**
 * LoRA end to end through the real `crl`: a run with --lora-rank writes each checkpoint's adapter
 * as PEFT saves it, and `crl export --format hf` writes the base plus (alpha / r) B A on every
 * adapted matrix and the base itself everywhere else. What a LoRA run pushes to remote engines:
 * lora-engine-push.test.ts.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-lora-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ATTENTION = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];
const MLP = ['gate_proj', 'up_proj', 'down_proj'];
const PROJECTIONS = [...ATTENTION, ...MLP];

function tensor(file: SafetensorsFile, name: string): { shape: number[]; data: Float32Array } {
  const t = file.tensors.get(name);
  if (!t) throw new Error(`no tensor ${name}`);
  const data = new Float32Array(t.shape.reduce((a, b) => a * b, 1));
  readTensorInto({ file, name, shape: t.shape, dst: data, what: name });
  return { shape: t.shape, data };
}

const ck = join(root, 'ck');
const cfg = join(root, 'config.json');
const run = join(root, 'run');

/** The contract's run: --init ck, two iterations of the scripted expert, rank 4, alpha 8. */
function contractRun(init: string, out = run, extra: string[] = []): string[] {
  return [
    'train',
    '--config',
    cfg,
    '--env',
    'kv-ledger',
    '--init',
    init,
    '--actor',
    'expert',
    '--batch',
    '6',
    '--iterations',
    '2',
    '--seed',
    '7',
    '--lora-rank',
    '4',
    '--lora-alpha',
    '8',
    ...extra,
    '--out',
    out,
  ];
}

describe.sequential('crl train --lora-rank (spawned)', () => {
  it('saves the adapter as PEFT does, and crl export --format hf writes the base plus (alpha / r) B A', async () => {
    await tinyCheckpoint(ck, { seed: 7 });
    // No critic warm-up and two epochs: the policy takes real steps in both iterations.
    writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0, epochs: 2 } }));
    const t = crl(contractRun(ck));
    expect(t.stderr).not.toMatch(/\n\s+at /);
    expect(t.code, t.stderr).toBe(0);
    expect(readMetrics(join(run, 'metrics.jsonl')).map((m) => m.iteration)).toEqual([1, 2]);

    const latest = latestCheckpoint(run)!;
    expect(latest.iteration).toBe(2);
    const config = JSON.parse(readFileSync(join(latest.dir, 'adapter_config.json'), 'utf8'));
    expect(config).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8, target_modules: PROJECTIONS });
    expect(config.base_model_name_or_path).toBe(ck);
    const adapter = openSafetensors(join(latest.dir, 'adapter_model.safetensors'), 'adapter');
    const base = openSafetensors(join(ck, 'model.safetensors'), 'base');
    const layers = [...base.tensors.keys()].filter((k) => k.endsWith('.self_attn.q_proj.weight')).length;
    expect(layers).toBeGreaterThan(0);
    // PEFT's names for a LlamaForCausalLM / Qwen3 base, the adapter name "default" stripped.
    const expectedKeys: string[] = [];
    for (let l = 0; l < layers; l++)
      for (const p of PROJECTIONS)
        for (const ab of ['lora_A', 'lora_B'])
          expectedKeys.push(
            `base_model.model.model.layers.${l}.${MLP.includes(p) ? 'mlp' : 'self_attn'}.${p}.${ab}.weight`,
          );
    expect([...adapter.tensors.keys()].sort()).toEqual(expectedKeys.sort());

    const out = join(root, 'hf');
    const ex = crl(['export', '--policy', run, '--format', 'hf', '--out', out]);
    expect(ex.stderr).not.toMatch(/\n\s+at /);
    expect(ex.code, ex.stderr).toBe(0);
    const merged = openSafetensors(join(out, 'model.safetensors'), 'export');
    expect([...merged.tensors.keys()].sort()).toEqual([...base.tensors.keys()].sort());
    const scale = 8 / 4;
    let nonZeroB = 0;
    let adapted = 0;
    let worst = 0;
    for (const name of base.tensors.keys()) {
      const w0 = tensor(base, name);
      const w = tensor(merged, name);
      const module = name.slice(0, -'.weight'.length);
      const key = `base_model.model.${module}`;
      if (!adapter.tensors.has(`${key}.lora_A.weight`)) {
        expect(w.data, name).toEqual(w0.data);
        continue;
      }
      adapted++;
      const a = tensor(adapter, `${key}.lora_A.weight`);
      const b = tensor(adapter, `${key}.lora_B.weight`);
      const [o, i] = w0.shape as [number, number];
      expect(a.shape).toEqual([4, i]);
      expect(b.shape).toEqual([o, 4]);
      if (b.data.some((x) => x !== 0)) nonZeroB++;
      let maxAbs = 0;
      let maxDiff = 0;
      for (let p = 0; p < o; p++)
        for (let q = 0; q < i; q++) {
          let s = 0;
          for (let k = 0; k < 4; k++) s += b.data[p * 4 + k]! * a.data[k * i + q]!;
          const want = w0.data[p * i + q]! + scale * s;
          maxAbs = Math.max(maxAbs, Math.abs(want));
          maxDiff = Math.max(maxDiff, Math.abs(w.data[p * i + q]! - want));
        }
      worst = Math.max(worst, maxDiff / maxAbs);
    }
    console.log(
      `export vs base + (alpha / r) B A over ${adapted} matrices: max relative difference ${worst.toExponential(2)}`,
    );
    expect(adapted).toBe(layers * PROJECTIONS.length);
    expect(nonZeroB).toBeGreaterThan(0);
    expect(worst).toBeLessThan(1e-5);
    const gguf = crl(['export', '--policy', run, '--format', 'gguf', '--out', join(root, 'merged.gguf')]);
    expect(gguf.code, gguf.stderr).toBe(0);
  }, 120_000);

  it('continues a LoRA run from --init on its base, and refuses other settings or a base whose weights changed', async () => {
    const next = join(root, 'next');
    const again = crl(contractRun(run, next));
    expect(again.code, again.stderr).toBe(0);
    const config = JSON.parse(readFileSync(join(latestCheckpoint(next)!.dir, 'adapter_config.json'), 'utf8'));
    expect(config.base_model_name_or_path).toBe(ck); // the base, not the run it continued
    const rank = crl(contractRun(run, join(root, 'rank'), ['--lora-rank', '8']));
    expect(rank.code).toBe(2);
    expect(rank.stderr).toMatch(/--lora-rank: 8 differs from the 4 of the adapters in --init/);
    await tinyCheckpoint(ck, { seed: 8 }); // the base overwritten in place with other weights
    const moved = crl(contractRun(run, join(root, 'moved')));
    expect(moved.code).toBe(2);
    expect(moved.stderr).toMatch(
      /--init: the adapters in .* were made for another base: .* now holds weights with hash/,
    );
    expect(moved.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(root, 'moved'))).toBe(false);
  }, 120_000);
});
