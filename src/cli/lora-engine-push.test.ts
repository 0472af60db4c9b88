import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpSampler } from '../adapters/http-sampler.ts';
import { startServe, tinyCheckpoint, type Served } from '../adapters/testing/crl-serve.ts';
import { latestCheckpoint } from '../experiments/runs/checkpoint-store.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { loadCheckpoint, saveCheckpoint } from '../model/formats/checkpoint.ts';
import { openSafetensors, readTensorInto } from '../model/formats/safetensors.ts';
import { baseWeightsHash } from '../model/lora/base-hash.ts';
import { LoraAdapter } from '../model/lora/lora-adapter.ts';
import { resolveLora } from '../model/lora/lora-config.ts';
import { writePeftAdapter } from '../model/lora/peft-files.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { Rng } from '../util/random.ts';
import { crlAsync } from './testing/spawn-crl.ts';

/**
 * What a LoRA run pushes to a remote engine (a real `crl serve` process): only the adapter, at
 * each policy version, to an engine that loads adapters (vLLM's /v1/load_lora_adapter), with
 * every request naming that version's adapter; the merged weights with --engine-lora off, or
 * when the engine refuses the adapter (auto), and --engine-lora on then stops the run.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-lora-push-'));
const TOKEN = 'lora-engine-push-test-token';
const env = { ...process.env, CRL_ADMIN_TOKEN: TOKEN };
const servers: Served[] = [];
afterAll(() => {
  servers.forEach((s) => s.child.kill('SIGKILL'));
  rmSync(root, { recursive: true, force: true });
});

async function engineOn(policy: string): Promise<Served> {
  const engine = await startServe(['--policy', policy, '--weights-dir', root], env);
  servers.push(engine);
  return engine;
}

/**
 * The runs start from `tuned`, a LoRA run's checkpoint on `base` whose adapters are far from zero
 * (B random), and continue its adapters: an untrained tiny policy earns no reward, so its own
 * adapters would never move, and every version's adapter would be the base. With these, a request
 * answered by the base instead of its version's adapter shows in every iteration's mismatch.
 */
async function loraInit(base: string, dir: string): Promise<void> {
  const policy = await tinyCheckpoint(base, { seed: 3 });
  const baseSha256 = baseWeightsHash(policy.net.params);
  const lora = new LoraAdapter({
    net: policy.net,
    settings: resolveLora({ rank: 4 }),
    optim: DEFAULT_OPTIMIZER,
    rng: new Rng(5),
  });
  const rng = new Rng(6);
  for (const m of lora.matrices) lora.b(m).forEach((_, k, b) => (b[k] = 0.05 * rng.normal()));
  lora.merge();
  await saveCheckpoint(dir, { policy });
  writePeftAdapter({ dir, lora, baseModel: base, baseSha256 });
}

function train(
  init: string,
  engine: Served,
  out: string,
  extra: string[] = [],
  config: object = {},
): ReturnType<typeof crlAsync> {
  const file = join(root, `${out.split('/').pop()}.json`);
  writeFileSync(file, JSON.stringify(config));
  return crlAsync(
    [
      'train',
      '--config',
      file,
      '--env',
      'kv-ledger',
      '--init',
      init,
      '--batch',
      '2',
      '--iterations',
      '2',
      '--lora-rank',
      '4',
      // Large steps: each version's adapter moves the log-probs well past the 1e-4 checked below.
      '--policy-lr',
      '1e-2',
      '--engine-url',
      engine.url,
      ...extra,
      '--out',
      out,
    ],
    { env, timeoutMs: 110_000 },
  );
}

const bytesIn = (dir: string) => readdirSync(dir).reduce((s, f) => s + statSync(join(dir, f)).size, 0);
const tensorsOf = (path: string) => {
  const file = openSafetensors(path, path);
  return new Map(
    [...file.tensors].map(([name, t]) => {
      const data = new Float32Array(t.shape.reduce((a, b) => a * b, 1));
      readTensorInto({ file, name, shape: t.shape, dst: data, what: name });
      return [name, data];
    }),
  );
};

describe.sequential('crl train --lora-rank --engine-url (real crl serve processes)', () => {
  const base = join(root, 'base');
  const tuned = join(root, 'tuned');

  it('pushes only the adapter at each version; the engine then answers as the final policy', async () => {
    await loraInit(base, tuned);
    const engine = await engineOn(base);
    const out = join(root, 'adapters-run');
    const r = await train(tuned, engine, out);
    expect(r.code, r.stderr + engine.stderr()).toBe(0);
    expect(r.stderr).toMatch(
      /engine: pushing the LoRA adapter at each policy version \([\d.]+ MB\) instead of the merged/,
    );

    // Nothing merged was written or loaded: three adapters went out (v0 before iteration 1, v1, v2 at the end).
    expect(existsSync(join(out, 'engine-weights'))).toBe(false);
    expect(engine.stderr()).not.toMatch(/loaded .*engine-weights/);
    const loads = [...engine.stderr().matchAll(/loaded LoRA adapter (crl-[0-9a-f]{8}-v(\d+)) from (\S+)/g)];
    expect(loads.map((m) => m[2])).toEqual(['0', '1', '2']);
    expect(engine.stderr()).toMatch(new RegExp(`unloaded LoRA adapter ${loads[0]![1]}\\b`));
    const pushed = join(out, 'engine-adapters');
    expect(readdirSync(pushed).sort()).toEqual(['v1', 'v2']); // the two the engine keeps loaded
    for (const v of ['v1', 'v2'])
      expect(readdirSync(join(pushed, v)).sort()).toEqual([
        'adapter_config.json',
        'adapter_model.safetensors',
        'crl_adapter.json',
      ]);
    const models = (await (await fetch(new URL('/v1/models', engine.url))).json()) as {
      data: { id: string; parent: string | null }[];
    };
    const final = loads[2]![1]!;
    expect(models.data.filter((m) => m.parent === 'base').map((m) => m.id)).toEqual([loads[1]![1], final]);

    // The run's own numbers: every iteration sampled what the trainer holds.
    const metrics = readMetrics(join(out, 'metrics.jsonl'));
    expect(metrics.map((m) => m.iteration)).toEqual([1, 2]);
    for (const m of metrics) {
      expect(m.metrics['rollout/generated_tokens']!).toBeGreaterThan(0);
      expect(m.metrics['policy/sampler_logprob_mismatch']!).toBeLessThan(1e-4);
    }

    // The final adapter is the final checkpoint's, and the engine serves it as the final policy.
    const last = latestCheckpoint(out)!.dir;
    expect(tensorsOf(join(pushed, 'v2', 'adapter_model.safetensors'))).toEqual(
      tensorsOf(join(last, 'adapter_model.safetensors')),
    );
    const policy = (await loadCheckpoint(last)).policy;
    const prompt = [1, 5, 9, 14, 3, 7];
    const [res] = await createHttpSampler({ url: engine.url, protocol: 'vllm', model: final }).sample(
      [{ prompt, maxTokens: 8, stopTokens: [] }],
      { temperature: 1, topP: 1 },
    );
    const seq = Int32Array.from([...prompt, ...res!.tokens]);
    const lp = policy.forward([seq]).logprobs[0]!;
    const lpBase = (await loadCheckpoint(base)).policy.forward([seq]).logprobs[0]!;
    let fromBase = 0;
    res!.tokens.forEach((_, t) => {
      expect(res!.logprobs[t]!).toBeCloseTo(lp[prompt.length + t]!, 5);
      fromBase = Math.max(fromBase, Math.abs(res!.logprobs[t]! - lpBase[prompt.length + t]!));
    });
    expect(fromBase).toBeGreaterThan(1e-3); // the base alone would give other numbers

    const adapterBytes = bytesIn(join(pushed, 'v2'));
    const mergedBytes = statSync(join(last, 'model.safetensors')).size;
    console.log(
      `pushed per policy version: adapter ${adapterBytes} bytes, merged weights ${mergedBytes} bytes (${(mergedBytes / adapterBytes).toFixed(1)}x)`,
    );
    expect(adapterBytes).toBeLessThan(mergedBytes);
  }, 120_000);

  it('pushes the merged weights with --engine-lora off', async () => {
    const engine = await engineOn(base);
    const out = join(root, 'merged-run');
    const r = await train(tuned, engine, out, ['--engine-lora', 'off']);
    expect(r.code, r.stderr + engine.stderr()).toBe(0);
    expect(existsSync(join(out, 'engine-adapters'))).toBe(false);
    expect(engine.stderr()).not.toMatch(/LoRA adapter/);
    // What the engine loaded last: the merged weights of the final policy, the adapter beside them, no AdamW state.
    const pushed = join(out, 'engine-weights');
    expect(existsSync(join(pushed, 'adapter_model.safetensors'))).toBe(true);
    expect(existsSync(join(pushed, 'optimizer.safetensors'))).toBe(false);
    expect(tensorsOf(join(pushed, 'model.safetensors'))).toEqual(
      tensorsOf(join(latestCheckpoint(out)!.dir, 'model.safetensors')),
    );
  }, 120_000);

  it("trains on vLLM's API with --engine-lora on: /v1/completions naming each version's adapter as its model", async () => {
    const engine = await engineOn(base);
    const out = join(root, 'vllm-run');
    const r = await train(tuned, engine, out, [], { engine: { url: engine.url, protocol: 'vllm', lora: 'on' } });
    expect(r.code, r.stderr + engine.stderr()).toBe(0);
    expect(existsSync(join(out, 'engine-weights'))).toBe(false);
    // Without the adapter named as the model of its requests the engine would sample the base.
    const metrics = readMetrics(join(out, 'metrics.jsonl'));
    expect(metrics.map((m) => m.iteration)).toEqual([1, 2]);
    for (const m of metrics) expect(m.metrics['policy/sampler_logprob_mismatch']!).toBeLessThan(1e-4);
    const refused = await train(tuned, engine, join(root, 'vllm-bad-run'), [], {
      engine: { url: engine.url, protocol: 'vllm' },
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/engine\.protocol: 'vllm' has no update_weights_from_disk: .*engine\.lora 'on'/);
  }, 120_000);

  it('falls back to the merged weights when the engine refuses the adapter (auto); --engine-lora on stops', async () => {
    // The engine serves another base: crl_adapter.json's hash is not its, so it refuses the adapter.
    const other = join(root, 'other-base');
    await tinyCheckpoint(other, { seed: 4 });
    const engine = await engineOn(other);
    const out = join(root, 'fallback-run');
    const r = await train(tuned, engine, out);
    expect(r.code, r.stderr + engine.stderr()).toBe(0);
    expect(r.stderr).toMatch(
      /engine: the engines take no LoRA adapter \(.*HTTP 400.*trained on another base.*\); pushing the merged weights instead/,
    );
    expect(existsSync(join(out, 'engine-weights', 'model.safetensors'))).toBe(true);
    expect(existsSync(join(out, 'engine-adapters'))).toBe(false);
    for (const m of readMetrics(join(out, 'metrics.jsonl')))
      expect(m.metrics['policy/sampler_logprob_mismatch']!).toBeLessThan(1e-4);

    const strict = await train(tuned, await engineOn(other), join(root, 'strict-run'), ['--engine-lora', 'on']);
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toMatch(/refused adapter crl-[0-9a-f]{8}-v0 .*HTTP 400.*trained on another base/);
    expect(strict.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(root, 'strict-run'))).toBe(false);
  }, 120_000);
});
