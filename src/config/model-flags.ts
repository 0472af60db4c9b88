import type { ConfigFlag } from './config-flag.ts';

/**
 * The config flags of the model (config-flags.ts): its preset, memory savers, critic, LoRA
 * adapters, tokenizer and initial weights.
 */
export const MODEL_FLAGS: readonly ConfigFlag[] = [
  { flag: 'model', path: ['model', 'preset'], kind: 'string', help: 'model preset' },
  {
    flag: 'recompute',
    path: ['model', 'recompute'],
    kind: 'boolean',
    help: "true: keep only each layer's input for the backward and recompute the rest there: less memory, one more trunk forward, the same gradients (default false)",
  },
  {
    flag: 'critic-layers',
    path: ['model', 'criticLayers'],
    kind: 'int',
    help: "K: the critic is the policy's embeddings and first K layers with a value head (default: all layers); docs/engine-scale.md",
  },
  {
    flag: 'critic-embedding',
    path: ['model', 'criticEmbedding'],
    kind: 'string',
    help: "trained (default) | frozen: the critic's embedding table is not trained, and has no gradient or AdamW moments (1.9 GB less at 0.6B); docs/lora.md",
  },
  {
    flag: 'lora-rank',
    path: ['model', 'lora', 'rank'],
    kind: 'int',
    help: "r: train LoRA adapters of rank r on the policy's frozen base instead of every weight (docs/lora.md)",
  },
  {
    flag: 'lora-alpha',
    path: ['model', 'lora', 'alpha'],
    kind: 'number',
    help: 'with --lora-rank: the update is scaled by alpha / r (default 2 r)',
  },
  {
    flag: 'lora-targets',
    path: ['model', 'lora', 'targets'],
    kind: 'list',
    help: 'with --lora-rank: the projections adapted, comma-separated, of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj (default all)',
  },
  {
    flag: 'tokenizer',
    path: ['tokenizer'],
    kind: 'string',
    help: "word | qwen3 | a directory with tokenizer.json (default: --init's own, else the family's, else word)",
  },
  {
    flag: 'init',
    path: ['model', 'init'],
    kind: 'string',
    help: 'weights to start from: a checkpoint (the SFT base) or a Hugging Face model directory',
  },
];
