import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { loadCheckpoint } from '../../model/formats/checkpoint.ts';
import { latestCheckpoint } from '../runs/checkpoint-store.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { exportPolicy } from '../export/export-policy.ts';
import { createRunDir } from '../runs/run-dir.ts';
import { train } from './train-loop.ts';

/** model.criticLayers (--critic-layers) through the training loop: update, checkpoint, resume. */
const config = parseTrainConfig({
  env: { name: 'chunk-sum' },
  model: { preset: 'tiny', criticLayers: 1 },
  batchEpisodes: 3,
  iterations: 2,
  checkpointEvery: 1,
  ppo: { criticWarmupIterations: 1 },
  sampleTrajectories: 0,
});

const replayable = (dir: string) =>
  readMetrics(join(dir, 'metrics.jsonl')).map((l) =>
    Object.fromEntries(Object.entries(l.metrics).filter(([k]) => !k.startsWith('perf/'))),
  );

describe("a critic of the policy's first K layers in training", () => {
  it('trains policy and critic, checkpoints a K-layer critic, and resumes to the same run', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-critic-layers-'));
    const a = join(root, 'a');
    createRunDir({ dir: a, system: 'compaction-rl', config });
    await train({ runDir: a, config, actor: 'expert' });
    const metrics = replayable(a);
    expect(metrics.map((m) => m['train/policy_updated'])).toEqual([0, 1]);
    expect(metrics[1]!['train/critic_steps']).toBeGreaterThan(0);
    const saved = await loadCheckpoint(latestCheckpoint(a)!.dir);
    expect(saved.policy.config.nLayers).toBe(2);
    expect(saved.critic!.config.nLayers).toBe(1);

    const b = join(root, 'b');
    createRunDir({ dir: b, system: 'compaction-rl', config });
    // Stopped right after iteration 1 logged (and checkpointed), then resumed.
    const stop = {
      start: () => undefined,
      stop: () => undefined,
      update: ({ iteration }: { iteration: number }) => {
        if (iteration === 1) throw new Error('stopped');
      },
    };
    await expect(train({ runDir: b, config, actor: 'expert', progress: stop })).rejects.toThrow('stopped');
    await train({ runDir: b, config, actor: 'expert' });
    expect(replayable(b)).toEqual(metrics);
    const resumed = await loadCheckpoint(latestCheckpoint(b)!.dir);
    expect(Buffer.from(resumed.critic!.net.params.buffer).equals(Buffer.from(saved.critic!.net.params.buffer))).toBe(
      true,
    );
    // Export writes the policy alone, whatever the critic's depth.
    const out = join(root, 'hf');
    const r = await exportPolicy({ policy: b, format: 'hf', out, precision: 'f32' });
    expect(r.parameters).toBe(saved.policy.net.paramCount);
  });

  it('with --critic-embedding frozen: trains the critic but not its embedding table, and the PyTorch trainer refuses it', async () => {
    const c = parseTrainConfig({ ...config, iterations: 3, model: { ...config.model, criticEmbedding: 'frozen' } });
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-critic-layers-')), 'run');
    createRunDir({ dir, system: 'compaction-rl', config: c });
    // Stopped after iteration 1's checkpoint, then run on: the critic trains, its embedding does not.
    const stop = {
      start: () => undefined,
      stop: () => undefined,
      update: ({ iteration }: { iteration: number }) => {
        if (iteration === 1) throw new Error('stopped');
      },
    };
    await expect(train({ runDir: dir, config: c, actor: 'expert', progress: stop })).rejects.toThrow('stopped');
    const first = await loadCheckpoint(latestCheckpoint(dir)!.dir);
    await train({ runDir: dir, config: c, actor: 'expert' });
    const last = await loadCheckpoint(latestCheckpoint(dir)!.dir);
    const embed = (m: typeof last) => m.critic!.net.w.embed;
    expect(embed(last)).toEqual(embed(first));
    expect(last.critic!.net.params).not.toEqual(first.critic!.net.params);
    const t = parseTrainConfig({ ...c, trainer: { kind: 'torch', command: 'no-such-trainer-command' } });
    const tdir = join(mkdtempSync(join(tmpdir(), 'crl-critic-layers-')), 'run');
    createRunDir({ dir: tdir, system: 'compaction-rl', config: t });
    await expect(train({ runDir: tdir, config: t, actor: 'expert' })).rejects.toThrow('--critic-embedding frozen');
  });

  it('refuses more critic layers than the policy has, naming the flag', async () => {
    const c = parseTrainConfig({ ...config, model: { preset: 'tiny', criticLayers: 3 } });
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-critic-layers-')), 'run');
    createRunDir({ dir, system: 'compaction-rl', config: c });
    await expect(train({ runDir: dir, config: c, actor: 'expert' })).rejects.toThrow(
      "model.criticLayers: 3 is more than the policy's 2 layers (--critic-layers takes 1 to 2)",
    );
  });

  it("is refused with the PyTorch trainer, which builds the critic at the policy's depth, before it starts", async () => {
    const c = parseTrainConfig({ ...config, trainer: { kind: 'torch', command: 'no-such-trainer-command' } });
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-critic-layers-')), 'run');
    createRunDir({ dir, system: 'compaction-rl', config: c });
    await expect(train({ runDir: dir, config: c, actor: 'expert' })).rejects.toThrow(
      "model.criticLayers: the torch trainer trains a critic of the policy's 2 layers only",
    );
  });
});
