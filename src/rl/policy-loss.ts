/**
 * Per-token policy loss (method §5) with its closed-form gradient, so the PPO driver can call
 * TrainablePolicy.backward() without autodiff.
 *
 * For a token t in the mask, with rho = exp(logp - logp_old) and advantage A:
 *   surrogate_t = -min(rho A, clip(rho, 1 - clipLow, 1 + clipHigh) A)
 *   kl_t        = k3 = exp(d) - d - 1, d = logp_old - logp   (low-variance estimate of KL(pi || pi_old)
 *                 on tokens sampled near pi; >= 0, zero at rho = 1)
 *   loss_t      = surrogate_t + klCoef kl_t - entropyCoef H_t
 * Gradients are elementwise: d loss_t / d logp_t and d loss_t / d H_t. Outside the mask everything is 0.
 *
 * Off-policy (off-policy.ts, docs/async.md): given the behaviour (sampler) log-probs and a
 * correction other than 'none', surrogate_t is multiplied by its detached importance weight w_t,
 * and so is its gradient; the KL and entropy terms are not weighted.
 */
import { RlInputError, requireFinite, requireSameLength } from './errors.ts';
import { importanceWeights, type OffPolicyOptions } from './off-policy.ts';

export interface PolicyLossOptions {
  logprobs: Float32Array[]; // [T] per segment, current policy
  oldLogprobs: Float32Array[]; // [T] per segment, the policy that produced the advantages
  advantages: Float32Array[]; // [T] per segment
  entropies?: Float32Array[]; // [T] per segment; needed when entropyCoef != 0
  masks: Uint8Array[]; // [T] per segment; positions in M
  clipLow: number; // eps_low: rho is clipped from below at 1 - clipLow
  clipHigh: number; // eps_high: rho is clipped from above at 1 + clipHigh
  klCoef: number;
  entropyCoef: number;
  /** [T] per segment: the sampler's log-probs, NaN where unknown; needed by a correction other than 'none'. */
  behaviourLogprobs?: Float32Array[];
  /** Absent or correction 'none': the surrogate is unweighted (method §5 exactly). */
  offPolicy?: OffPolicyOptions;
}

export interface PolicyLossTerms {
  perToken: Float32Array[]; // [T] total per-token loss
  gradLogprobs: Float32Array[]; // [T] d perToken[t] / d logprobs[t]
  gradEntropies: Float32Array[]; // [T] d perToken[t] / d entropies[t]
  clipped: Uint8Array[]; // [T] 1 where the clipped branch is the active one (the clip fraction)
  approxKl: Float32Array[]; // [T] (rho - 1) - log rho: k3 estimate of KL(pi_old || pi), a diagnostic
}

/** One token's surrogate and its derivative wrt logp. Exported for tests. */
export function surrogateToken(options: {
  logprob: number;
  oldLogprob: number;
  advantage: number;
  clipLow: number;
  clipHigh: number;
}): { loss: number; grad: number; clipped: boolean } {
  const { logprob, oldLogprob, advantage: a, clipLow, clipHigh } = options;
  const rho = Math.exp(logprob - oldLogprob);
  const rhoClipped = Math.min(Math.max(rho, 1 - clipLow), 1 + clipHigh);
  const unclippedObj = rho * a;
  const clippedObj = rhoClipped * a;
  // min picks the unclipped branch on ties: then the gradient flows (d rho / d logp = rho).
  if (unclippedObj <= clippedObj) return { loss: -unclippedObj, grad: -rho * a, clipped: false };
  return { loss: -clippedObj, grad: 0, clipped: true };
}

export function policyLoss(options: PolicyLossOptions): PolicyLossTerms {
  const { logprobs, oldLogprobs, advantages, entropies, masks, clipLow, clipHigh, klCoef, entropyCoef } = options;
  for (const [v, what] of [
    [clipLow, 'clipLow'],
    [clipHigh, 'clipHigh'],
    [klCoef, 'klCoef'],
    [entropyCoef, 'entropyCoef'],
  ] as const) {
    requireFinite(v, what);
    if (v < 0) throw new RlInputError(`${what} must be >= 0, got ${v}`);
  }
  if (entropyCoef !== 0 && !entropies) throw new RlInputError('policyLoss: entropyCoef != 0 needs entropies');
  const n = masks.length;
  const corrected = options.offPolicy !== undefined && options.offPolicy.correction !== 'none';
  if (corrected && (!options.behaviourLogprobs || options.behaviourLogprobs.length !== n))
    throw new RlInputError(
      `policyLoss: off-policy correction '${options.offPolicy!.correction}' needs behaviourLogprobs, one array per segment (${n} masks)`,
    );
  const iw = corrected
    ? importanceWeights({
        oldLogprobs,
        behaviourLogprobs: options.behaviourLogprobs!,
        masks,
        offPolicy: options.offPolicy!,
      })
    : null;
  if (
    logprobs.length !== n ||
    oldLogprobs.length !== n ||
    advantages.length !== n ||
    (entropies && entropies.length !== n)
  ) {
    throw new RlInputError(`policyLoss: every input needs one array per segment (${n} masks)`);
  }
  const out: PolicyLossTerms = { perToken: [], gradLogprobs: [], gradEntropies: [], clipped: [], approxKl: [] };
  for (let s = 0; s < n; s++) {
    const mask = masks[s]!;
    const lp = logprobs[s]!;
    const old = oldLogprobs[s]!;
    const adv = advantages[s]!;
    const ent = entropies?.[s];
    const w = iw?.[s]!.weights;
    for (const [arr, what] of [
      [lp, 'logprobs'],
      [old, 'oldLogprobs'],
      [adv, 'advantages'],
      ...(ent ? [[ent, 'entropies'] as const] : []),
    ] as const) {
      requireSameLength({ a: arr, b: mask, what: `policyLoss segment ${s} ${what} vs mask` });
    }
    const T = mask.length;
    const perToken = new Float32Array(T);
    const gradLp = new Float32Array(T);
    const gradEnt = new Float32Array(T);
    const clipped = new Uint8Array(T);
    const approxKl = new Float32Array(T);
    for (let t = 0; t < T; t++) {
      if (mask[t] !== 1) continue;
      const sur = surrogateToken({ logprob: lp[t]!, oldLogprob: old[t]!, advantage: adv[t]!, clipLow, clipHigh });
      if (w) {
        // Detached weight: it scales the surrogate and its gradient, never is differentiated.
        sur.loss *= w[t]!;
        sur.grad *= w[t]!;
      }
      const d = old[t]! - lp[t]!;
      const k3 = Math.exp(d) - d - 1;
      const dK3 = 1 - Math.exp(d); // d k3 / d logp
      const h = ent ? ent[t]! : 0;
      perToken[t] = sur.loss + klCoef * k3 - entropyCoef * h;
      gradLp[t] = sur.grad + klCoef * dK3;
      gradEnt[t] = -entropyCoef;
      clipped[t] = sur.clipped ? 1 : 0;
      approxKl[t] = Math.exp(-d) - 1 + d;
      if (!Number.isFinite(perToken[t]!)) {
        throw new RlInputError(
          `policyLoss: non-finite loss at segment ${s} token ${t} (logp ${lp[t]}, old ${old[t]}, A ${adv[t]})`,
        );
      }
    }
    out.perToken.push(perToken);
    out.gradLogprobs.push(gradLp);
    out.gradEntropies.push(gradEnt);
    out.clipped.push(clipped);
    out.approxKl.push(approxKl);
  }
  return out;
}
