import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCheckpoint, saveCheckpoint } from '../model/formats/checkpoint.ts';
import { modelConfig } from '../model/network/config.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { latestCheckpoint } from '../experiments/runs/checkpoint-store.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { Rng } from '../util/random.ts';
import { updateWeightsFromDisk } from './engine-weights.ts';
import { createHttpSampler, EngineError } from './http-sampler.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const CRL = join(ROOT, 'bin', 'crl');
const tokenizer = new WordTokenizer();

async function tinyCheckpoint(dir: string, seed: number): Promise<void> {
  await saveCheckpoint(dir, {
    policy: new PolicyModel({
      config: modelConfig('tiny', { vocabSize: tokenizer.vocabSize, maxSeqLen: 256 }),
      optim: DEFAULT_OPTIMIZER,
      rng: new Rng(seed),
    }),
  });
}

describe('training against a remote engine (crl train --engine-url, a real crl serve process)', () => {
  const children: ChildProcess[] = [];
  afterAll(() => children.forEach((c) => c.kill('SIGTERM')));

  it('pushes the policy to the engine before every iteration, so the engine samples under the trainer weights', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-remote-train-'));
    // The engine starts from other weights than the trainer: without the push every sampled
    // logprob would disagree with the trainer's recompute.
    await tinyCheckpoint(join(root, 'engine-init'), 1);
    await tinyCheckpoint(join(root, 'trainer-init'), 2);
    // The engine loads weights only with its admin token and only from under the run's directory.
    const token = 'remote-training-test-token';
    const child = spawn(CRL, ['serve', '--policy', join(root, 'engine-init'), '--port', '0', '--weights-dir', root], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CRL_ADMIN_TOKEN: token },
    });
    children.push(child);
    const url: string = await new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`crl serve exited with ${code}`)));
      createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line).url));
    });
    const run = join(root, 'run');
    const r = spawnSync(
      CRL,
      [
        'train',
        '--env',
        'chunk-sum',
        '--init',
        join(root, 'trainer-init'),
        '--batch',
        '3',
        '--iterations',
        '3',
        '--checkpoint-every',
        '3',
        '--policy-lr',
        '1e-2',
        '--engine-url',
        url,
        '--out',
        run,
      ],
      { cwd: ROOT, encoding: 'utf8', env: { ...process.env, CRL_ADMIN_TOKEN: token } },
    );
    expect(r.status, r.stderr).toBe(0);
    const metrics = readMetrics(join(run, 'metrics.jsonl'));
    expect(metrics.map((m) => m.iteration)).toEqual([1, 2, 3]);
    for (const m of metrics) {
      expect(m.metrics['rollout/generated_tokens']!).toBeGreaterThan(0);
      expect(m.metrics['policy/sampler_logprob_mismatch']!).toBeLessThan(1e-4);
    }

    // After training the engine holds the final weights: its logprobs are the final checkpoint's.
    const final = (await loadCheckpoint(latestCheckpoint(run)!.dir)).policy;
    const engineStart = (await loadCheckpoint(join(root, 'engine-init'))).policy;
    const prompt = tokenizer.encode('<bos> <sys> you are an agent <eot> <user>');
    const [res] = await createHttpSampler({ url, protocol: 'sglang' }).sample(
      [{ prompt, maxTokens: 5, stopTokens: [] }],
      { temperature: 1, topP: 1 },
    );
    const seq = Int32Array.from([...prompt, ...res!.tokens]);
    const lpFinal = final.forward([seq]).logprobs[0]!;
    const lpStart = engineStart.forward([seq]).logprobs[0]!;
    let farFromStart = 0;
    res!.tokens.forEach((_, t) => {
      expect(res!.logprobs[t]!).toBeCloseTo(lpFinal[prompt.length + t]!, 4);
      farFromStart = Math.max(farFromStart, Math.abs(res!.logprobs[t]! - lpStart[prompt.length + t]!));
    });
    expect(farFromStart).toBeGreaterThan(1e-3); // the engine's own first weights would give other numbers

    // A weight update the engine refuses is an EngineError with its reason.
    await expect(updateWeightsFromDisk({ url, modelPath: join(root, 'missing'), token })).rejects.toThrow(EngineError);
    await expect(updateWeightsFromDisk({ url, modelPath: join(root, 'missing'), token })).rejects.toThrow(
      /weight update failed \(HTTP 400\).*inside one of this server's --weights-dir/,
    );
    await expect(updateWeightsFromDisk({ url, modelPath: join(root, 'engine-init') })).rejects.toThrow(
      /weight update failed \(HTTP 401\).*admin token/,
    );
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one

  it('refuses an engine with the vLLM protocol for training, naming the valid one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-remote-bad-'));
    writeFileSync(
      join(dir, 'c.json'),
      JSON.stringify({
        env: { name: 'chunk-sum' },
        model: { preset: 'tiny' },
        engine: { url: 'http://127.0.0.1:1', protocol: 'vllm' },
      }),
    );
    const r = spawnSync(CRL, ['train', '--config', join(dir, 'c.json'), '--out', join(dir, 'run')], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/engine\.protocol.*sglang/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
