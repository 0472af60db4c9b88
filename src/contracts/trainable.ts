/**
 * What the PPO update needs from a model, and nothing more (rl/ never sees a model class).
 *
 * Position convention, shared by policy and critic: for a segment's tokens x[0..T-1],
 *  - logprobs[t] = log pi(x[t] | x[<t]) for t >= 1; logprobs[0] = 0 (the first token is never generated);
 *  - entropies[t] = entropy of pi(. | x[<t]) for t >= 1; entropies[0] = 0;
 *  - values[t] = V(x[<t]), the value of the state in which token t is generated; values[0] = 0.
 * So everything is indexed by the token it concerns, and loss masks line up directly.
 */
export interface PolicyForward {
  logprobs: Float32Array[]; // [T] per sequence
  entropies: Float32Array[]; // [T] per sequence
}

export interface TrainablePolicy {
  /**
   * Runs the policy over whole sequences. With train: true it keeps activations for exactly one
   * following backward(); with train: false (default) it keeps nothing (old-logprob recompute).
   */
  forward(tokens: readonly Int32Array[], options?: { train?: boolean }): PolicyForward;
  /** Accumulates parameter gradients from dLoss/dlogprobs[t] (and dLoss/dentropies[t] if given). */
  backward(grads: { logprobs: readonly Float32Array[]; entropies?: readonly Float32Array[] }): void;
  /** Clips the accumulated gradient, takes one optimizer step, zeroes gradients. */
  step(): { gradNorm: number; lr: number };
}

export interface TrainableCritic {
  forward(tokens: readonly Int32Array[], options?: { train?: boolean }): { values: Float32Array[] };
  backward(grads: { values: readonly Float32Array[] }): void;
  step(): { gradNorm: number; lr: number };
}
