import { z } from 'zod';

/**
 * The trainer's reply headers (docs/torch-trainer.md#protocol), parsed before anything is trusted:
 * a reply that does not match is an error naming the trainer and the operation.
 */
const Base = {
  id: z.number().int().nullable().optional(),
  buffers: z.array(z.number().int().nonnegative()),
  /** Seconds the trainer spent on the request (the rest of the round trip is the wire's). */
  seconds: z.number().nonnegative().optional(),
};

export const FailureReplySchema = z.looseObject({
  ok: z.literal(false),
  error: z.string(),
  traceback: z.string().optional(),
});

export const HelloReplySchema = z.looseObject({
  ...Base,
  ok: z.literal(true),
  protocol: z.number().int(),
  torch: z.string(),
  device: z.string(),
  pid: z.number().int().positive(),
  /** Processes training together (torchrun ranks); 1 without torchrun. */
  worldSize: z.number().int().positive().optional(),
  /** How the ranks hold the weights: replicated (data parallel) or sharded with FSDP (`--shard fsdp`). */
  shard: z.enum(['replicate', 'fsdp']).optional(),
  /** The network: `built-in` (python/crl_torch/modules.py) or `transformers VERSION` (hf_models.py). */
  model: z.string().optional(),
  /** What init accepts beyond protocol 1's networks: `lora` (a policy's LoRA adapters). */
  features: z.array(z.string()).optional(),
});

/** Elements each rank holds of one network: parameters, and AdamW moments (m and v together). */
const HeldSchema = z.object({
  params: z.array(z.number().int().nonnegative()),
  moments: z.array(z.number().int().nonnegative()),
});
export type HeldElements = z.infer<typeof HeldSchema>;

export const InitReplySchema = z.looseObject({
  ...Base,
  ok: z.literal(true),
  nets: z.array(z.string()),
  /** Per network, per rank (index = rank): what that rank holds. */
  held: z.record(z.string(), HeldSchema).optional(),
  /** Per network with LoRA adapters: what runs them (`built-in` or `peft VERSION`). */
  adapters: z.record(z.string(), z.string()).optional(),
});

export const EmptyReplySchema = z.looseObject({ ...Base, ok: z.literal(true) });

/** JSON has no NaN / Infinity: the trainer sends a non-finite norm as its string ("nan", "inf"). */
export const StepReplySchema = z.looseObject({
  ...Base,
  ok: z.literal(true),
  gradNorm: z.union([z.number(), z.enum(['nan', 'inf', '-inf'])]),
  lr: z.number(),
});

export const PullReplySchema = z.looseObject({ ...Base, ok: z.literal(true), step: z.number().int().nonnegative() });

export function gradNormValue(v: number | 'nan' | 'inf' | '-inf'): number {
  if (typeof v === 'number') return v;
  return v === 'nan' ? Number.NaN : v === 'inf' ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
}

/**
 * What the trainer said at hello: torch's version, the device, how many processes (torchrun
 * ranks) train and how they hold the weights, which network runs (`built-in` or `transformers
 * VERSION`), what its init accepts beyond protocol 1's networks (`lora`); pid is its process id
 * on its own machine (rank 0's). After an init with LoRA adapters, `adapters` says what runs them
 * (`built-in` or `peft VERSION`).
 */
export interface TrainerInfo {
  torch: string;
  device: string;
  worldSize: number;
  pid: number;
  shard: 'replicate' | 'fsdp';
  model: string;
  features: readonly string[];
  adapters?: string;
}

/** Seconds the trainer spent answering (its handlers, collectives included) and the rest of each round trip. */
export interface TrainerTiming {
  requests: number;
  computeS: number;
  wireS: number;
}
