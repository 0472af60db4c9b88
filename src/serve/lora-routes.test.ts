import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, tinyCheckpoint, type Served } from '../adapters/testing/crl-serve.ts';
import { saveCheckpoint } from '../model/formats/checkpoint.ts';
import { baseWeightsHash } from '../model/lora/base-hash.ts';
import { LoraAdapter } from '../model/lora/lora-adapter.ts';
import { resolveLora } from '../model/lora/lora-config.ts';
import { PEFT_FILES, writePeftAdapter } from '../model/lora/peft-files.ts';
import type { PolicyModel } from '../model/network/policy.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { Rng } from '../util/random.ts';

/**
 * vLLM's runtime LoRA API on a real `crl serve` process: an adapter loaded onto the base answers
 * by its name with exactly what a server of the merged checkpoint answers (a second real process),
 * the base still answers its own name, and adapters that do not fit are refused with vLLM's
 * statuses, types and messages.
 */
const TOKEN = 'lora-routes-test-admin-token';
const root = mkdtempSync(join(tmpdir(), 'crl-lora-routes-'));
const weights = join(root, 'weights'); // the --weights-dir
const servers: Served[] = [];
let engine: Served; // the base, loading adapters
let mergedEngine: Served; // the merged checkpoint
afterAll(() => {
  servers.forEach((s) => s.stop());
  rmSync(root, { recursive: true, force: true });
});

/** LoRA adapters of rank 4 on `policy` with B away from 0, written as PEFT does, then merged into it. */
function trainedAdapter(policy: PolicyModel, dir: string, seed: number): void {
  mkdirSync(dir, { recursive: true });
  const baseSha256 = baseWeightsHash(policy.net.params);
  const settings = resolveLora({ rank: 4 });
  const lora = new LoraAdapter({ net: policy.net, settings, optim: DEFAULT_OPTIMIZER, rng: new Rng(seed) });
  const rng = new Rng(seed + 1);
  for (const m of lora.matrices) lora.b(m).forEach((_, k, b) => (b[k] = 0.05 * rng.normal()));
  lora.merge();
  writePeftAdapter({ dir, lora, baseModel: 'base', baseSha256, optimizer: false });
}

/** The fields of the answers these tests read. */
interface Answer {
  model?: string;
  choices?: unknown[];
  output_ids?: number[];
  meta_info?: { output_token_logprobs?: unknown[] };
}

async function post(server: Served, path: string, body: unknown, token: string | null = TOKEN) {
  const res = await fetch(new URL(path, server.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, type: res.headers.get('content-type'), text, json: json as Answer };
}

const load = (lora_name: string, lora_path: string, extra: object = {}) =>
  post(engine, '/v1/load_lora_adapter', { lora_name, lora_path, ...extra });
/** vLLM's error body: `{ error: { message, type, param, code } }`. */
const vllmError = (status: number, type: string, message: RegExp) => ({
  status,
  json: { error: { message: expect.stringMatching(message), type, param: null, code: status } },
});

const PROMPT = [1, 5, 9, 14, 3, 7];
const greedy = { prompt: PROMPT, max_tokens: 20, temperature: 0, logprobs: 3, return_tokens_as_token_ids: true };
const seeded = { prompt: PROMPT, max_tokens: 20, temperature: 1, n: 2, seed: 11, logprobs: 0 };

describe("crl serve's LoRA adapters (vLLM's /v1/load_lora_adapter, real crl serve processes)", () => {
  let baseAnswer: Answer;

  beforeAll(async () => {
    const base = await tinyCheckpoint(join(root, 'base'), { seed: 3 });
    trainedAdapter(base, join(weights, 'tuned'), 5); // base now holds the merge
    await saveCheckpoint(join(root, 'merged'), { policy: base });
    // Refused ones: a base of the same shape with other weights, and a model of another shape.
    trainedAdapter(await tinyCheckpoint(join(root, 'other-base'), { seed: 4 }), join(weights, 'other-base'), 6);
    const wide = await tinyCheckpoint(join(root, 'wide'), { seed: 4, config: { dModel: 48 } });
    trainedAdapter(wide, join(weights, 'other-shape'), 7);
    cpSync(join(weights, 'tuned'), join(weights, 'wrong-rank'), { recursive: true });
    const config = JSON.parse(readFileSync(join(weights, 'wrong-rank', PEFT_FILES.config), 'utf8'));
    writeFileSync(join(weights, 'wrong-rank', PEFT_FILES.config), JSON.stringify({ ...config, r: 2, lora_alpha: 4 }));
    cpSync(join(weights, 'tuned'), join(weights, 'no-tensors'), { recursive: true });
    rmSync(join(weights, 'no-tensors', PEFT_FILES.model));
    mkdirSync(join(weights, 'empty'));
    cpSync(join(weights, 'tuned'), join(root, 'outside'), { recursive: true }); // a real adapter, outside
    const env = { ...process.env, CRL_ADMIN_TOKEN: TOKEN };
    [engine, mergedEngine] = await Promise.all([
      startServe(['--policy', join(root, 'base'), '--weights-dir', weights], env),
      startServe(['--policy', join(root, 'merged')]),
    ]);
    servers.push(engine, mergedEngine);
    baseAnswer = (await post(engine, '/v1/completions', greedy)).json;
  }, 120_000);

  it('loads an adapter that answers by its name exactly as a server of the merged checkpoint does', async () => {
    const loaded = await load('tuned', join(weights, 'tuned'));
    expect(loaded.status).toBe(200);
    expect(loaded.text).toBe("Success: LoRA adapter 'tuned' added successfully.");
    expect(loaded.type).toMatch(/^text\/plain/);
    const models = (await (await fetch(new URL('/v1/models', engine.url))).json()) as { data: object[] };
    expect(models.data).toEqual([
      expect.objectContaining({ id: 'base', parent: null }),
      expect.objectContaining({ id: 'tuned', object: 'model', root: join(weights, 'tuned'), parent: 'base' }),
    ]);

    for (const body of [greedy, seeded]) {
      const lora = await post(engine, '/v1/completions', { ...body, model: 'tuned' });
      const merged = await post(mergedEngine, '/v1/completions', body);
      expect(lora.status, lora.text).toBe(200);
      expect(lora.json.model).toBe('tuned'); // vLLM names the adapter that answered
      expect(lora.json.choices).toEqual(merged.json.choices); // tokens, text, log-probs, top-3: all equal
    }
    const generate = {
      input_ids: PROMPT,
      sampling_params: { max_new_tokens: 20, temperature: 0 },
      return_logprob: true,
    };
    const viaSglang = await post(engine, '/generate', { ...generate, lora_path: 'tuned' });
    const fromMerged = await post(mergedEngine, '/generate', generate);
    expect(viaSglang.json.output_ids).toEqual(fromMerged.json.output_ids);
    expect(viaSglang.json.meta_info!.output_token_logprobs).toEqual(fromMerged.json.meta_info!.output_token_logprobs);

    // The base still answers its own name (or none) with the base, and differs from the adapter.
    const base = await post(engine, '/v1/completions', { ...greedy, model: 'base' });
    expect(base.json.choices).toEqual(baseAnswer.choices);
    expect(base.json.choices).not.toEqual((await post(mergedEngine, '/v1/completions', greedy)).json.choices);
  });

  it("refuses adapters that do not fit the base, in vLLM's error shape", async () => {
    expect(await load('x', join(weights, 'other-base'))).toMatchObject(
      vllmError(400, 'BadRequestError', /^Loading lora x failed: the adapter was trained on another base/),
    );
    expect(await load('x', join(weights, 'other-shape'))).toMatchObject(
      vllmError(400, 'BadRequestError', /q_proj.*is \[4, 48\]; r 4 on the served model's q_proj/),
    );
    expect(await load('x', join(weights, 'wrong-rank'))).toMatchObject(
      vllmError(400, 'BadRequestError', /is \[4, \d+\]; r 2 on the served model's q_proj .* needs \[2, \d+\]/),
    );
    expect(await load('x', join(weights, 'no-tensors'))).toMatchObject(
      vllmError(400, 'BadRequestError', /holds adapter_config.json but no adapter_model.safetensors/),
    );
    // No adapter, no directory, and a real adapter outside --weights-dir: one and the same answer.
    for (const path of [join(weights, 'empty'), join(weights, 'missing'), join(root, 'outside')])
      expect(await load('x', path)).toMatchObject(
        vllmError(404, 'NotFoundError', new RegExp(`^Loading lora x failed: No adapter found for ${path}$`)),
      );
    expect(await load('', join(weights, 'tuned'))).toMatchObject(
      vllmError(400, 'InvalidUserInput', /^Both 'lora_name' and 'lora_path' must be provided\.$/),
    );
    expect(await post(engine, '/v1/load_lora_adapter', { lora_name: 'x' })).toMatchObject(
      vllmError(400, 'BadRequestError', /lora_path/),
    );
    expect(await load('tuned', join(weights, 'tuned'))).toMatchObject(
      vllmError(400, 'InvalidUserInput', /^The lora adapter 'tuned' has already been loaded\. If you want/),
    );
    expect((await load('tuned', join(weights, 'tuned'), { load_inplace: true })).status).toBe(200);
    expect((await post(engine, '/v1/load_lora_adapter', { lora_name: 'x', lora_path: 'tuned' }, null)).status).toBe(
      401,
    );
    expect((await post(engine, '/v1/completions', { ...greedy, model: 'x' })).status).toBe(404); // nothing was loaded
  });

  it('unloads by name; the name then answers 404 and leaves /v1/models', async () => {
    expect(await post(engine, '/v1/unload_lora_adapter', { lora_name: 'nope' })).toMatchObject(
      vllmError(404, 'NotFoundError', /^The lora adapter 'nope' cannot be found\.$/),
    );
    const unloaded = await post(engine, '/v1/unload_lora_adapter', { lora_name: 'tuned' });
    expect(unloaded).toMatchObject({ status: 200, text: "Success: LoRA adapter 'tuned' removed successfully." });
    expect(await post(engine, '/v1/completions', { ...greedy, model: 'tuned' })).toMatchObject(
      vllmError(404, 'NotFoundError', /^The model `tuned` does not exist\.$/),
    );
    const models = (await (await fetch(new URL('/v1/models', engine.url))).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['base']);
    expect(engine.stderr()).toMatch(/crl serve: loaded LoRA adapter tuned from .* \(\d+\.\d+ MB of A and B\)/);
  });
});
