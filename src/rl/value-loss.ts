/**
 * Per-token clipped value loss (method §5) and its closed-form gradient wrt the values:
 *   loss_t = 0.5 max((V - G)^2, (clip(V, V_old - eps_v, V_old + eps_v) - G)^2)
 * With valueClip null the loss is 0.5 (V - G)^2. Outside the mask everything is 0.
 */
import { RlInputError, requireFinite, requireSameLength } from './errors.ts';

export interface ValueLossOptions {
  values: Float32Array[]; // [T] per segment, current critic
  oldValues: Float32Array[]; // [T] per segment, the critic that produced the returns
  returns: Float32Array[]; // [T] per segment, targets G
  masks: Uint8Array[]; // [T] per segment; generated positions
  valueClip: number | null; // eps_v
}

export interface ValueLossTerms {
  perToken: Float32Array[]; // [T]
  gradValues: Float32Array[]; // [T] d perToken[t] / d values[t]
}

/** One token's loss and derivative. Exported for tests. */
export function valueLossToken(options: {
  value: number;
  oldValue: number;
  target: number;
  valueClip: number | null;
}): {
  loss: number;
  grad: number;
} {
  const { value: v, oldValue, target: g, valueClip } = options;
  const unclipped = (v - g) * (v - g);
  if (valueClip === null) return { loss: 0.5 * unclipped, grad: v - g };
  const vc = Math.min(Math.max(v, oldValue - valueClip), oldValue + valueClip);
  const clipped = (vc - g) * (vc - g);
  // max picks the unclipped branch on ties. When the clipped branch is strictly larger, V is
  // outside the clip range (else vc = V), so that branch is constant in V: gradient 0.
  if (unclipped >= clipped) return { loss: 0.5 * unclipped, grad: v - g };
  return { loss: 0.5 * clipped, grad: 0 };
}

export function valueLoss(options: ValueLossOptions): ValueLossTerms {
  const { values, oldValues, returns, masks, valueClip } = options;
  if (valueClip !== null) {
    requireFinite(valueClip, 'valueClip');
    if (valueClip < 0) throw new RlInputError(`valueClip must be >= 0 or null, got ${valueClip}`);
  }
  const n = masks.length;
  if (values.length !== n || oldValues.length !== n || returns.length !== n) {
    throw new RlInputError(`valueLoss: every input needs one array per segment (${n} masks)`);
  }
  const out: ValueLossTerms = { perToken: [], gradValues: [] };
  for (let s = 0; s < n; s++) {
    const mask = masks[s]!;
    for (const [arr, what] of [
      [values[s]!, 'values'],
      [oldValues[s]!, 'oldValues'],
      [returns[s]!, 'returns'],
    ] as const) {
      requireSameLength({ a: arr, b: mask, what: `valueLoss segment ${s} ${what} vs mask` });
    }
    const perToken = new Float32Array(mask.length);
    const grad = new Float32Array(mask.length);
    for (let t = 0; t < mask.length; t++) {
      if (mask[t] !== 1) continue;
      const r = valueLossToken({
        value: values[s]![t]!,
        oldValue: oldValues[s]![t]!,
        target: returns[s]![t]!,
        valueClip,
      });
      if (!Number.isFinite(r.loss)) throw new RlInputError(`valueLoss: non-finite loss at segment ${s} token ${t}`);
      perToken[t] = r.loss;
      grad[t] = r.grad;
    }
    out.perToken.push(perToken);
    out.gradValues.push(grad);
  }
  return out;
}
