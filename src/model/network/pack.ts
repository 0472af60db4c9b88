import { attentionLayout } from '../../tensor/attention.ts';
import type { AttentionLayout } from '../../tensor/op-args.ts';
import type { ModelConfig } from './config.ts';

/**
 * Ragged batches are packed end to end (no padding): row r of every activation buffer is one
 * token, positions restart at 0 for each sequence and attention stays inside a sequence, so a
 * token's outputs do not depend on the rest of the batch. N = total tokens.
 */
export interface PackedBatch {
  n: number;
  tokens: Int32Array; // [N]
  positions: Int32Array; // [N] position inside its own sequence
  targets: Int32Array; // [N] next token in the same sequence; -1 on each sequence's last row
  layout: AttentionLayout;
}

export class SequenceTooLongError extends Error {
  constructor(
    readonly length: number,
    readonly maxSeqLen: number,
    what = 'sequence',
    // What bounds it: the model's positions, or a context allocated smaller than them (llama.cpp's).
    limit = `the model's maxSeqLen ${maxSeqLen}; shorten it or use a model with a longer context`,
  ) {
    super(`${what} of ${length} tokens exceeds ${limit}`);
    this.name = 'SequenceTooLongError';
  }
}

export function packBatch({
  sequences,
  cfg,
}: {
  sequences: readonly ArrayLike<number>[];
  cfg: ModelConfig;
}): PackedBatch {
  let n = 0;
  for (const s of sequences) {
    if (s.length > cfg.maxSeqLen) throw new SequenceTooLongError(s.length, cfg.maxSeqLen);
    n += s.length;
  }
  const tokens = new Int32Array(n);
  const positions = new Int32Array(n);
  const targets = new Int32Array(n);
  let r = 0;
  for (const s of sequences) {
    for (let t = 0; t < s.length; t++) {
      const id = s[t]!;
      if (!Number.isInteger(id) || id < 0 || id >= cfg.vocabSize)
        throw new Error(`token id ${id} is outside the model's vocabulary [0, ${cfg.vocabSize})`);
      tokens[r + t] = id;
      positions[r + t] = t;
      targets[r + t] = t + 1 < s.length ? s[t + 1]! : -1;
    }
    r += s.length;
  }
  return {
    n,
    tokens,
    positions,
    targets,
    layout: attentionLayout({ lengths: sequences.map((s) => s.length), nHeads: cfg.nHeads }),
  };
}
