/**
 * Tiny real implementations of TrainablePolicy / TrainableCritic for tests and examples: a
 * bigram softmax policy (one logit row per previous token) and a per-previous-token value table,
 * both trained with plain SGD. They follow the position convention of trainable.ts exactly:
 * index 0 is never generated (logprob, entropy and value 0).
 */
import type { PolicyForward, TrainableCritic, TrainablePolicy } from '../../contracts/index.ts';

function softmaxRow(logits: Float64Array, row: number, vocab: number): Float64Array {
  const p = new Float64Array(vocab);
  let max = -Infinity;
  for (let k = 0; k < vocab; k++) max = Math.max(max, logits[row * vocab + k]!);
  let z = 0;
  for (let k = 0; k < vocab; k++) z += p[k] = Math.exp(logits[row * vocab + k]! - max);
  for (let k = 0; k < vocab; k++) p[k]! /= z;
  return p;
}

function sgd(params: Float64Array, grad: Float64Array, options: { lr: number; maxGradNorm: number }): number {
  let sq = 0;
  for (const g of grad) sq += g * g;
  const norm = Math.sqrt(sq);
  const scale = norm > options.maxGradNorm ? options.maxGradNorm / norm : 1;
  for (let i = 0; i < params.length; i++) params[i]! -= options.lr * scale * grad[i]!;
  grad.fill(0);
  return norm;
}

export class TabularPolicy implements TrainablePolicy {
  readonly logits: Float64Array; // [V, V] row = previous token
  private readonly grad: Float64Array; // [V, V]
  private pending: readonly Int32Array[] | null = null;

  constructor(readonly options: { vocab: number; lr: number; maxGradNorm?: number }) {
    this.logits = new Float64Array(options.vocab * options.vocab);
    this.grad = new Float64Array(options.vocab * options.vocab);
  }

  /** log pi(token | previous) for inspection. */
  logprob(previous: number, token: number): number {
    return Math.log(softmaxRow(this.logits, previous, this.options.vocab)[token]!);
  }

  forward(tokens: readonly Int32Array[], options?: { train?: boolean }): PolicyForward {
    const V = this.options.vocab;
    const logprobs: Float32Array[] = [];
    const entropies: Float32Array[] = [];
    for (const x of tokens) {
      const lp = new Float32Array(x.length);
      const ent = new Float32Array(x.length);
      for (let t = 1; t < x.length; t++) {
        const p = softmaxRow(this.logits, x[t - 1]!, V);
        lp[t] = Math.log(p[x[t]!]!);
        let h = 0;
        for (let k = 0; k < V; k++) if (p[k]! > 0) h -= p[k]! * Math.log(p[k]!);
        ent[t] = h;
      }
      logprobs.push(lp);
      entropies.push(ent);
    }
    this.pending = options?.train ? tokens : null;
    return { logprobs, entropies };
  }

  backward(grads: { logprobs: readonly Float32Array[]; entropies?: readonly Float32Array[] }): void {
    if (!this.pending) throw new Error('TabularPolicy.backward needs a preceding forward with train: true');
    const V = this.options.vocab;
    this.pending.forEach((x, s) => {
      for (let t = 1; t < x.length; t++) {
        const row = x[t - 1]!;
        const p = softmaxRow(this.logits, row, V);
        const gl = grads.logprobs[s]![t]!;
        const ge = grads.entropies?.[s]![t] ?? 0;
        let h = 0;
        for (let k = 0; k < V; k++) if (p[k]! > 0) h -= p[k]! * Math.log(p[k]!);
        for (let k = 0; k < V; k++) {
          const dLogp = (k === x[t] ? 1 : 0) - p[k]!; // d log p[x_t] / d logit_k
          const dEnt = p[k]! > 0 ? -p[k]! * (Math.log(p[k]!) + h) : 0; // d H / d logit_k
          this.grad[row * V + k]! += gl * dLogp + ge * dEnt;
        }
      }
    });
    this.pending = null;
  }

  step(): { gradNorm: number; lr: number } {
    const gradNorm = sgd(this.logits, this.grad, {
      lr: this.options.lr,
      maxGradNorm: this.options.maxGradNorm ?? Infinity,
    });
    return { gradNorm, lr: this.options.lr };
  }
}

export class TabularCritic implements TrainableCritic {
  readonly table: Float64Array; // [V] value by previous token
  private readonly grad: Float64Array; // [V]
  private pending: readonly Int32Array[] | null = null;

  constructor(readonly options: { vocab: number; lr: number; maxGradNorm?: number }) {
    this.table = new Float64Array(options.vocab);
    this.grad = new Float64Array(options.vocab);
  }

  forward(tokens: readonly Int32Array[], options?: { train?: boolean }): { values: Float32Array[] } {
    this.pending = options?.train ? tokens : null;
    return { values: tokens.map((x) => Float32Array.from(x, (_, t) => (t === 0 ? 0 : this.table[x[t - 1]!]!))) };
  }

  backward(grads: { values: readonly Float32Array[] }): void {
    if (!this.pending) throw new Error('TabularCritic.backward needs a preceding forward with train: true');
    this.pending.forEach((x, s) => {
      for (let t = 1; t < x.length; t++) this.grad[x[t - 1]!]! += grads.values[s]![t]!;
    });
    this.pending = null;
  }

  step(): { gradNorm: number; lr: number } {
    const gradNorm = sgd(this.table, this.grad, {
      lr: this.options.lr,
      maxGradNorm: this.options.maxGradNorm ?? Infinity,
    });
    return { gradNorm, lr: this.options.lr };
  }
}
