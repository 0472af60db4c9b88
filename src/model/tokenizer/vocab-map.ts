/**
 * Real token ids <-> the network's internal indices (docs/decisions/0013-trimmed-vocabulary.md).
 *
 * The network only has a vocabulary size. With the word tokenizer the map is the identity. With a
 * real tokenizer (Qwen3: 151,669 ids) the embedded model works on a trimmed vocabulary: the ids a
 * task family and the chat layout can produce, in ascending real-id order, then one unknown slot.
 * Records, samplers and servers speak real ids; PolicyModel, CriticModel and ModelSampler map at
 * their boundary. An input id outside the set maps to the unknown slot, whose logit is pinned to
 * UNKNOWN_LOGIT in training and sampling alike, so the model can never emit it and the sampler's
 * log-probs equal the trainer's.
 */

/** A logit low enough that exp underflows to 0, yet finite (entropy terms p·log p stay 0, not NaN). */
export const UNKNOWN_LOGIT = -1e30;

/** Which tokenizer's ids a model speaks: its name and content hash (model/tokenizer/load-tokenizer.ts). */
export interface TokenizerRef {
  name: string;
  /** Absent only for checkpoints written before tokenizers were recorded (the word vocabulary). */
  sha256?: string;
}

export class VocabMap {
  /** The tokenizer whose ids this map takes. */
  readonly tokenizer: TokenizerRef;
  /** The network's vocabulary size. */
  readonly size: number;
  /** Internal index of the unknown slot; null for the identity map. */
  readonly unknown: number | null;
  /** Real id of each internal index (the unknown slot excluded); null for the identity map. */
  readonly ids: readonly number[] | null;
  private readonly lookup: Int32Array | null; // [max real id + 1] internal index, -1 = unknown

  private constructor(options: { size: number; ids: readonly number[] | null; tokenizer: TokenizerRef }) {
    this.tokenizer = options.tokenizer;
    this.size = options.size;
    this.ids = options.ids;
    if (!options.ids) {
      this.unknown = null;
      this.lookup = null;
      return;
    }
    this.unknown = options.ids.length;
    const max = options.ids.length ? Math.max(...options.ids) : 0;
    this.lookup = new Int32Array(max + 1).fill(-1);
    options.ids.forEach((id, i) => (this.lookup![id] = i));
  }

  static identity(size: number, tokenizer: TokenizerRef = { name: 'word' }): VocabMap {
    return new VocabMap({ size, ids: null, tokenizer });
  }

  /** A trimmed vocabulary over these real ids (deduplicated and sorted), plus the unknown slot. */
  static trimmed(realIds: Iterable<number>, tokenizer: TokenizerRef): VocabMap {
    const ids = [...new Set(realIds)].sort((a, b) => a - b);
    if (ids.some((x) => !Number.isInteger(x) || x < 0)) throw new Error('trimmed vocabulary ids must be integers >= 0');
    return new VocabMap({ size: ids.length + 1, ids, tokenizer });
  }

  get isIdentity(): boolean {
    return this.ids === null;
  }

  /** Internal index of one real id (the unknown slot for ids outside a trimmed set). */
  toInternalId(id: number): number {
    if (!this.lookup) return id;
    const i = id < this.lookup.length ? this.lookup[id]! : -1;
    return i >= 0 ? i : this.unknown!;
  }

  /** Internal indices of a sequence; the identity map returns an Int32Array input as it is. */
  toInternal(ids: ArrayLike<number>): Int32Array {
    if (!this.lookup) return ids instanceof Int32Array ? ids : Int32Array.from(ids);
    const out = new Int32Array(ids.length);
    for (let i = 0; i < ids.length; i++) out[i] = this.toInternalId(ids[i]!);
    return out;
  }

  /** Real id of an internal index (never the unknown slot: it cannot be sampled). */
  toReal(index: number): number {
    if (!this.ids) return index;
    const id = this.ids[index];
    if (id === undefined) throw new Error(`internal: index ${index} has no real id (unknown slot or out of range)`);
    return id;
  }

  /** True if a real id has its own internal index. */
  covers(id: number): boolean {
    return !this.lookup || (id < this.lookup.length && this.lookup[id]! >= 0);
  }

  /** Pins the unknown slot's logit in rows of [n, size] logits (no-op for the identity map). */
  maskLogits(logits: Float32Array, n: number): void {
    if (this.unknown === null) return;
    for (let r = 0; r < n; r++) logits[r * this.size + this.unknown] = UNKNOWN_LOGIT;
  }
}
