/**
 * Adapters as PEFT saves them, so PEFT (PeftModel.from_pretrained) and vLLM's LoRA loading read a
 * checkpoint's adapter unchanged:
 *   adapter_config.json          peft_type "LORA", r, lora_alpha, target_modules, base_model_name_or_path, ...
 *   adapter_model.safetensors    base_model.model.<module>.lora_A.weight [r, I] and .lora_B.weight [O, r]
 *                                (PEFT's names for a LlamaForCausalLM / Qwen3 base with the adapter
 *                                name "default" stripped, as its save does)
 * and beside them what PEFT has no field for:
 *   crl_adapter.json             the base's weight hash (base-hash.ts), checked before the adapters are used
 *   adapter-optimizer.safetensors  AdamW moments of A and B (<key>.exp_avg, <key>.exp_avg_sq), step in metadata
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { writeChunksAtomic, writeFileAtomic } from '../../util/atomic-write.ts';
import {
  CheckpointFormatError,
  openSafetensors,
  readTensorInto,
  safetensorsChunks,
  type NamedTensor,
} from '../formats/safetensors.ts';
import { LORA_TARGETS, type LoraSettings } from './lora-config.ts';
import type { LoraAdapter } from './lora-adapter.ts';

export const PEFT_FILES = {
  config: 'adapter_config.json',
  model: 'adapter_model.safetensors',
  crl: 'crl_adapter.json',
  optimizer: 'adapter-optimizer.safetensors',
} as const;

/** The fields of PEFT's LoraConfig we write and read (PEFT ignores none of them; vLLM reads r, lora_alpha, target_modules). */
const AdapterConfigSchema = z
  .object({
    peft_type: z.literal('LORA'),
    task_type: z.string().nullable().optional(),
    base_model_name_or_path: z.string().nullable().optional(),
    r: z.number().int().positive(),
    lora_alpha: z.number().positive(),
    lora_dropout: z.number().optional(),
    target_modules: z.union([z.array(z.string()), z.string()]),
  })
  .loose();

/**
 * PEFT options that change what the adapter's tensors mean (another scale, per-module ranks, a
 * magnitude vector, biases): with one of them set away from its default, W0 + (alpha / r) B A
 * would be the wrong merge, so such an adapter is refused rather than misread.
 */
const VARIANT_DEFAULTS: Readonly<Record<string, (v: unknown) => boolean>> = {
  use_rslora: (v) => v == null || v === false,
  use_dora: (v) => v == null || v === false,
  rank_pattern: (v) => v == null || (typeof v === 'object' && Object.keys(v).length === 0),
  alpha_pattern: (v) => v == null || (typeof v === 'object' && Object.keys(v).length === 0),
  layers_to_transform: (v) => v == null,
  modules_to_save: (v) => v == null,
  bias: (v) => v == null || v === 'none',
};

const CrlAdapterSchema = z
  .object({
    format: z.literal('compaction-rl-adapter'),
    version: z.literal(1),
    /** sha256 of the base's f32 weights (base-hash.ts): the base the adapters were trained on. */
    baseSha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();

/** PEFT's key of matrix m's A or B. */
export function peftKey(m: { module: string }, which: 'lora_A' | 'lora_B'): string {
  return `base_model.model.${m.module}.${which}.weight`;
}

function adapterTensors(lora: LoraAdapter, buf: Float32Array, suffix = ''): NamedTensor[] {
  const r = lora.settings.rank;
  return lora.matrices.flatMap((m) => [
    { name: peftKey(m, 'lora_A') + suffix, shape: [r, m.in], data: lora.a(m, buf) },
    { name: peftKey(m, 'lora_B') + suffix, shape: [m.out, r], data: lora.b(m, buf) },
  ]);
}

/**
 * Writes the adapter's files into `dir` (a checkpoint directory). `optimizer: false` leaves out
 * the AdamW moments: an adapter pushed to an engine (which only serves it) is then its few MB.
 */
export function writePeftAdapter({
  dir,
  lora,
  baseModel,
  baseSha256,
  optimizer = true,
}: {
  dir: string;
  lora: LoraAdapter;
  /** base_model_name_or_path: the directory the base was loaded from. */
  baseModel: string;
  baseSha256: string;
  optimizer?: boolean;
}): void {
  const { rank, alpha, targets } = lora.settings;
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModel,
    revision: null,
    r: rank,
    lora_alpha: alpha,
    lora_dropout: 0,
    target_modules: targets,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    modules_to_save: null,
    layers_to_transform: null,
    layers_pattern: null,
    rank_pattern: {},
    alpha_pattern: {},
    use_rslora: false,
  };
  writeFileAtomic(join(dir, PEFT_FILES.config), JSON.stringify(config, null, 2) + '\n');
  writeChunksAtomic(
    join(dir, PEFT_FILES.model),
    safetensorsChunks(adapterTensors(lora, lora.params), { format: 'pt' }),
  );
  const { m, v, step } = lora.optimizer.state;
  if (optimizer)
    writeChunksAtomic(
      join(dir, PEFT_FILES.optimizer),
      safetensorsChunks([...adapterTensors(lora, m, '.exp_avg'), ...adapterTensors(lora, v, '.exp_avg_sq')], {
        step: String(step),
      }),
    );
  const crl: z.infer<typeof CrlAdapterSchema> = { format: 'compaction-rl-adapter', version: 1, baseSha256 };
  writeFileAtomic(join(dir, PEFT_FILES.crl), JSON.stringify(crl) + '\n');
}

/** What a directory's adapter says about itself. */
export interface PeftAdapterInfo {
  settings: LoraSettings;
  baseModel: string | null;
  /** null: not written by crl (no crl_adapter.json), so the base cannot be checked. */
  baseSha256: string | null;
}

export function hasPeftAdapter(dir: string): boolean {
  return existsSync(join(dir, PEFT_FILES.config));
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new CheckpointFormatError(`${path}: ${(e as Error).message}`);
  }
}

export function readPeftAdapterInfo(dir: string): PeftAdapterInfo {
  const path = join(dir, PEFT_FILES.config);
  const r = AdapterConfigSchema.safeParse(readJson(path));
  if (!r.success)
    throw new CheckpointFormatError(
      `${path}: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  const variants = Object.entries(VARIANT_DEFAULTS)
    .filter(([k, isDefault]) => !isDefault((r.data as Record<string, unknown>)[k]))
    .map(([k]) => k);
  if (variants.length)
    throw new CheckpointFormatError(
      `${path}: ${variants.join(', ')} set; crl reads plain LoRA adapters only (W0 + (lora_alpha / r) B A on every layer)`,
    );
  const modules = typeof r.data.target_modules === 'string' ? [r.data.target_modules] : r.data.target_modules;
  const unknown = modules.filter((t) => !(LORA_TARGETS as string[]).includes(t));
  if (unknown.length)
    throw new CheckpointFormatError(
      `${path}: target_modules ${unknown.join(', ')} are not projections crl adapts (${LORA_TARGETS.join(', ')})`,
    );
  const crlPath = join(dir, PEFT_FILES.crl);
  let baseSha256: string | null = null;
  if (existsSync(crlPath)) {
    const c = CrlAdapterSchema.safeParse(readJson(crlPath));
    if (!c.success) throw new CheckpointFormatError(`${crlPath}: not a crl adapter record`);
    baseSha256 = c.data.baseSha256;
  }
  return {
    settings: {
      rank: r.data.r,
      alpha: r.data.lora_alpha,
      targets: LORA_TARGETS.filter((t) => modules.includes(t)),
    },
    baseModel: r.data.base_model_name_or_path ?? null,
    baseSha256,
  };
}

/** Reads A and B (and, when `optimizer`, their AdamW moments) of `dir` into `lora`, whose settings must match. */
export function loadPeftAdapter({
  dir,
  lora,
  optimizer,
}: {
  dir: string;
  lora: LoraAdapter;
  optimizer: boolean;
}): void {
  const what = join(dir, PEFT_FILES.model);
  const file = openSafetensors(what, what);
  for (const t of adapterTensors(lora, lora.params))
    readTensorInto({ file, name: t.name, shape: t.shape, dst: t.data, what });
  if (!optimizer) return;
  const opt = join(dir, PEFT_FILES.optimizer);
  const of = openSafetensors(opt, opt);
  const { m, v } = lora.optimizer.state;
  for (const t of [...adapterTensors(lora, m, '.exp_avg'), ...adapterTensors(lora, v, '.exp_avg_sq')])
    readTensorInto({ file: of, name: t.name, shape: t.shape, dst: t.data, what: opt });
  const step = Number(of.metadata.step);
  if (!Number.isInteger(step) || step < 0)
    throw new CheckpointFormatError(`${opt}: metadata.step is missing or not a non-negative integer`);
  lora.optimizer.state.step = step;
}
