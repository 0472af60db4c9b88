/**
 * LoRA settings (Hu et al. 2021): each adapted matrix W [O, I] of the frozen base becomes
 * W0 + (alpha / r) B A with A [r, I] and B [O, r] trained. Targets are Hugging Face module names,
 * as PEFT's target_modules spells them; the default adapts every attention and MLP projection.
 * docs/lora.md.
 */
import { z } from 'zod';
import type { ModelConfig } from '../network/config.ts';
import { layerProductParams } from '../network/memory-plan.ts';
import type { TensorSpec } from '../network/weights.ts';

/** The projections a LoRA may adapt, and the HF module path each lives under in a layer. */
export const LORA_TARGET_MODULES = {
  q_proj: 'self_attn',
  k_proj: 'self_attn',
  v_proj: 'self_attn',
  o_proj: 'self_attn',
  gate_proj: 'mlp',
  up_proj: 'mlp',
  down_proj: 'mlp',
} as const;
export type LoraTarget = keyof typeof LORA_TARGET_MODULES;
export const LORA_TARGETS = Object.keys(LORA_TARGET_MODULES) as LoraTarget[];

/** What a config or the flags say (model.lora); alpha and targets have defaults (resolveLora). */
export const LoraSectionSchema = z
  .object({
    /** r: the adapters' rank, 1 to the smaller side of every adapted matrix. */
    rank: z.number().int().positive(),
    /** alpha: the update is scaled by alpha / r; default 2 r (scale 2). */
    alpha: z.number().positive().optional(),
    /** Module names (LORA_TARGETS); default all of them. */
    targets: z
      .array(z.enum(LORA_TARGETS as [LoraTarget, ...LoraTarget[]]))
      .min(1)
      .optional(),
  })
  .strict();
export type LoraSection = z.infer<typeof LoraSectionSchema>;

/** Settings with every default filled in. */
export interface LoraSettings {
  rank: number;
  alpha: number;
  targets: LoraTarget[];
}

export function resolveLora(section: LoraSection): LoraSettings {
  const targets = section.targets ?? LORA_TARGETS;
  // Deduplicated and in the layer's order, so the same set always saves the same file.
  return {
    rank: section.rank,
    alpha: section.alpha ?? 2 * section.rank,
    targets: LORA_TARGETS.filter((t) => targets.includes(t)),
  };
}

/** The update's scale alpha / r. */
export function loraScale(s: LoraSettings): number {
  return s.alpha / s.rank;
}

/** One adapted matrix: where it sits in the network's flat parameters, and its shape. */
export interface LoraMatrix {
  /** The Hugging Face module path without `.weight`, e.g. model.layers.0.self_attn.q_proj. */
  module: string;
  target: LoraTarget;
  offset: number; // into the network's parameters
  out: number; // O
  in: number; // I
}

/** The matrices `targets` adapt in a network laid out by `specs`, layer by layer. */
export function loraMatrices({
  specs,
  cfg,
  targets,
}: {
  specs: readonly TensorSpec[];
  cfg: ModelConfig;
  targets: readonly LoraTarget[];
}): LoraMatrix[] {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const out: LoraMatrix[] = [];
  for (let l = 0; l < cfg.nLayers; l++) {
    for (const target of targets) {
      const module = `model.layers.${l}.${LORA_TARGET_MODULES[target]}.${target}`;
      const s = byName.get(`${module}.weight`);
      if (!s) throw new Error(`the network has no ${module}.weight`);
      out.push({ module, target, offset: s.offset, out: s.shape[0]!, in: s.shape[1]! });
    }
  }
  return out;
}

/**
 * Why these settings cannot adapt this model, as one line naming the flag; null when they can. A
 * rank above a matrix's smaller side adds no expressiveness, only parameters.
 */
export function loraProblem(settings: LoraSettings, matrices: readonly LoraMatrix[]): string | null {
  let narrowest: LoraMatrix | null = null;
  for (const m of matrices)
    if (!narrowest || Math.min(m.out, m.in) < Math.min(narrowest.out, narrowest.in)) narrowest = m;
  if (!narrowest) return null;
  const side = Math.min(narrowest.out, narrowest.in);
  if (settings.rank <= side) return null;
  return `model.lora.rank: ${settings.rank} is above the smaller side of ${narrowest.target} [${narrowest.out}, ${narrowest.in}] (--lora-rank takes 1 to ${side} with these --lora-targets)`;
}

/**
 * What LoRA adapters of `settings` on `policy` hold, for the memory plan (network/memory-plan.ts):
 * the frozen copy (the adapted matrices; in storage 'base' every layer product) counted in f32,
 * which a bf16 base halves (frozen-base.ts), so the plan errs high.
 */
export function loraMemory(
  policy: { net: { specs: readonly TensorSpec[]; cfg: ModelConfig } },
  settings: LoraSettings,
  storage: 'merged' | 'base' = 'merged',
): { frozenBytes: number; adapterParams: number; storage: 'merged' | 'base' } {
  const { cfg } = policy.net;
  const ms = loraMatrices({ specs: policy.net.specs, cfg, targets: settings.targets });
  const frozen = storage === 'base' ? cfg.nLayers * layerProductParams(cfg) : ms.reduce((a, m) => a + m.out * m.in, 0);
  return {
    frozenBytes: 4 * frozen,
    adapterParams: ms.reduce((a, m) => a + settings.rank * (m.out + m.in), 0),
    storage,
  };
}
