import type { TrainableCritic } from '../../contracts/index.ts';
import type { OptimizerConfig } from '../../optim/config.ts';
import type { Rng } from '../../util/random.ts';
import type { ModelConfig } from './config.ts';
import { LlamaNetwork } from './network.ts';
import { packShifted, unpackShifted } from './shifted-rows.ts';
import type { PolicyModel } from './policy.ts';
import { VocabMap } from '../tokenizer/vocab-map.ts';
import { paramCount, tensorSpecs, weightViews } from './weights.ts';

/**
 * The critic: a separate Llama trunk of the policy's shape with a scalar value head
 * (score.weight [1, C], score.bias [1]); values[t] = V(x[<t]) is read at row start + t - 1.
 * fromPolicy copies the policy's trunk (method §6) and starts the head at zero. With `layers` K
 * below the policy's L, the trunk is the policy's embeddings, its first K layers and its final
 * norm: the critic's parameters, gradients and AdamW moments then cost the embeddings plus K / L
 * of the layers (docs/engine-scale.md "Training memory", docs/decisions/0045).
 */
export class CriticModel implements TrainableCritic {
  readonly net: LlamaNetwork;
  /** The policy's vocabulary map: forward takes real token ids. */
  readonly vocab: VocabMap;

  constructor({
    config,
    optim,
    rng,
    params,
    vocab,
  }: {
    config: ModelConfig;
    optim: OptimizerConfig;
    rng?: Rng;
    params?: Float32Array;
    vocab?: VocabMap;
  }) {
    this.vocab = vocab ?? VocabMap.identity(config.vocabSize);
    this.net = new LlamaNetwork({
      cfg: config,
      head: 'value',
      optim,
      ...(rng ? { rng } : {}),
      ...(params ? { params } : {}),
    });
  }

  static fromPolicy({
    policy,
    optim,
    layers,
    embedding = 'trained',
  }: {
    policy: PolicyModel;
    optim: OptimizerConfig;
    /** K: the policy's first K layers (absent: all of them, the method's critic). */
    layers?: number | undefined;
    /**
     * 'frozen': the copied embedding table is not trained (network.ts frozenEmbedding): no
     * gradient or AdamW moments for its V x C floats, 2.5 GB at Qwen3-0.6B's vocabulary.
     */
    embedding?: 'trained' | 'frozen';
  }): CriticModel {
    const config = criticConfig(policy.config, layers);
    const critic = new CriticModel({ config, optim, params: trunkCopy(policy, config), vocab: policy.vocab });
    critic.net.frozenEmbedding = embedding === 'frozen';
    return critic;
  }

  get config(): ModelConfig {
    return this.net.cfg;
  }

  forward(tokens: readonly Int32Array[], options: { train?: boolean } = {}): { values: Float32Array[] } {
    const { cfg, w, profiler: prof } = this.net;
    const internal = this.vocab.isIdentity ? tokens : tokens.map((x) => this.vocab.toInternal(x));
    const { batch, ws } = this.net.runTrunk(internal, options.train ?? false);
    const t = prof ? prof.now() : 0;
    const c = cfg.dModel;
    const sw = w.score!;
    const b = w.scoreBias![0]!;
    for (let r = 0; r < batch.n; r++) {
      let s = b;
      const o = r * c;
      for (let i = 0; i < c; i++) s += ws.lnf[o + i]! * sw[i]!;
      ws.values[r] = s;
    }
    if (prof) prof.lap('value-head', t);
    return { values: unpackShifted(ws.values, batch) };
  }

  backward(grads: { values: readonly Float32Array[] }): void {
    const { cfg, w, g } = this.net;
    const { batch, ws } = this.net.takePending();
    packShifted({ rows: ws.dvalues, grads: grads.values, batch, what: 'value' });
    const c = cfg.dModel;
    const sw = w.score!;
    const gw = g.score!;
    let gb = 0;
    for (let r = 0; r < batch.n; r++) {
      const dv = ws.dvalues[r]!;
      const o = r * c;
      gb += dv;
      for (let i = 0; i < c; i++) {
        ws.dlnf[o + i] = dv * sw[i]!;
        gw[i]! += dv * ws.lnf[o + i]!;
      }
    }
    g.scoreBias![0]! += gb;
    this.net.backwardTrunk(batch, ws);
  }

  step(): { gradNorm: number; lr: number } {
    return this.net.step();
  }
}

/**
 * The critic's shape for a policy of shape `policy`: the same, or with the first `layers` of its
 * layers. Throws for a count outside 1 .. the policy's layers.
 */
export function criticConfig(policy: ModelConfig, layers: number | undefined): ModelConfig {
  if (layers === undefined || layers === policy.nLayers) return policy;
  if (!Number.isInteger(layers) || layers < 1 || layers > policy.nLayers)
    throw new Error(`critic layers: ${layers} is not a whole number from 1 to the policy's ${policy.nLayers} layers`);
  return { ...policy, nLayers: layers };
}

/** A critic parameter buffer (shape cfg) whose trunk tensors are copies of the policy's; the head is zero. */
function trunkCopy(policy: PolicyModel, cfg: ModelConfig): Float32Array {
  const src = policy.net;
  const specs = tensorSpecs(cfg, 'value');
  const byName = new Map(src.specs.map((t) => [t.name, t]));
  const out = new Float32Array(paramCount(specs));
  for (const t of specs) {
    const from = byName.get(t.name);
    if (from) out.set(src.params.subarray(from.offset, from.offset + from.size), t.offset);
  }
  // A policy whose layer products come from a layer source (LoRA storage 'base') holds none itself.
  if (src.layerSource) {
    const views = weightViews({ buf: out, specs, cfg, head: 'value' });
    views.layers.forEach((lw, l) => {
      const from = src.layerSource!(l);
      for (const p of ['qkv', 'o', 'gateUp', 'down'] as const) lw[p].set(from[p]);
    });
  }
  return out;
}
