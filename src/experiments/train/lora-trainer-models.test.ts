import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { latestCheckpoint } from '../runs/checkpoint-store.ts';
import { createRunDir } from '../runs/run-dir.ts';
import { nativeAddon } from '../../tensor/native.ts';
import { loraStorage } from './lora-trainer-models.ts';
import { train } from './train-loop.ts';
import { crashAfter } from '../testing/crash-after.ts';

const config = parseTrainConfig({
  env: { name: 'chunk-sum' },
  model: { preset: 'tiny', lora: { rank: 2, targets: ['q_proj', 'v_proj', 'down_proj'] } },
  batchEpisodes: 3,
  iterations: 4,
  checkpointEvery: 2,
  ppo: { criticWarmupIterations: 0 },
  sampleTrajectories: 0,
});

const root = mkdtempSync(join(tmpdir(), 'crl-lora-loop-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('a LoRA run', () => {
  it("keeps the base in bf16 (storage 'base') on the embedded trainer with the native addon, merged weights for the PyTorch trainer", () => {
    expect(loraStorage(config)).toBe(nativeAddon ? 'base' : 'merged');
    expect(loraStorage(parseTrainConfig({ ...config, trainer: { kind: 'torch' } }))).toBe('merged');
  });

  it('resumes from its checkpoint (adapters and their moments) to the bytes an uninterrupted run writes', async () => {
    const a = join(root, 'a');
    createRunDir({ dir: a, system: 'compaction-rl', config });
    await train({ runDir: a, config, actor: 'expert' });
    const b = join(root, 'b');
    createRunDir({ dir: b, system: 'compaction-rl', config });
    await expect(train({ runDir: b, config, actor: 'expert', progress: crashAfter(3) })).rejects.toThrow(
      'simulated crash',
    );
    expect(latestCheckpoint(b)?.iteration).toBe(2);
    await train({ runDir: b, config, actor: 'expert' });
    expect(readFileSync(join(b, 'metrics.jsonl'), 'utf8')).toBe(readFileSync(join(a, 'metrics.jsonl'), 'utf8'));
    const last = (dir: string, file: string) => readFileSync(join(latestCheckpoint(dir)!.dir, file));
    for (const file of ['adapter_model.safetensors', 'adapter-optimizer.safetensors', 'model.safetensors'])
      expect(last(b, file).equals(last(a, file)), file).toBe(true);
    const state = JSON.parse(last(a, 'trainer_state.json').toString());
    expect(state.policyAdapter).toBe('lora');
  });
});
