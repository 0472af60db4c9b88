import type { PolicyForward, TrainablePolicy } from '../../contracts/index.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { linearBackward, linearForward } from '../../tensor/linear.ts';
import { logprobBackward, logprobForward } from '../../tensor/logprob.ts';
import type { Rng } from '../../util/random.ts';
import type { ModelConfig } from './config.ts';
import { LlamaNetwork } from './network.ts';
import { packShifted, unpackShifted } from './shifted-rows.ts';
import { applySamplingTransform, temperatureBackward } from './sampling-transform.ts';
import { VocabMap } from '../tokenizer/vocab-map.ts';

/**
 * The policy: Llama trunk + lm_head, implementing TrainablePolicy (contracts/trainable.ts).
 * Row r of the packed batch predicts the token at r + 1, which the position convention reports
 * at index t = r + 1 - start. SFT is backward with dL/dlogprob = -1/N at the target tokens.
 */
export class PolicyModel implements TrainablePolicy {
  readonly net: LlamaNetwork;
  /**
   * Real token ids <-> the network's indices (tokenizer/vocab-map.ts): forward takes real ids; with a
   * trimmed vocabulary the unknown slot's logit is pinned so it is never predicted.
   */
  readonly vocab: VocabMap;
  /**
   * The sampling transform the log-probs are taken under (sampling-transform.ts): the temperature
   * and top-p the rollouts sample with, so that the PPO ratio and the importance weights compare
   * the distribution tokens were drawn from with itself (method §6). Temperature 1 and top-p 1
   * (the default, and SFT's) leave the logits untouched.
   */
  sampling: { temperature: number; topP: number } = { temperature: 1, topP: 1 };

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
    /** Default: the identity over config.vocabSize (the word vocabulary). */
    vocab?: VocabMap;
  }) {
    this.vocab = vocab ?? VocabMap.identity(config.vocabSize);
    if (this.vocab.size !== config.vocabSize)
      throw new Error(`the vocabulary map has ${this.vocab.size} entries, the model ${config.vocabSize}`);
    this.net = new LlamaNetwork({
      cfg: config,
      head: 'lm',
      optim,
      ...(rng ? { rng } : {}),
      ...(params ? { params } : {}),
    });
  }

  get config(): ModelConfig {
    return this.net.cfg;
  }

  /**
   * The same model and vocabulary on a copy of the weights, for sampling only (its optimizer is
   * the default and never made): an engine serving a LoRA adapter's merge beside its base.
   */
  copyForSampling(): PolicyModel {
    const copy = new PolicyModel({
      config: this.config,
      optim: DEFAULT_OPTIMIZER,
      params: Float32Array.from(this.net.params),
      vocab: this.vocab,
    });
    copy.sampling = { ...this.sampling };
    return copy;
  }

  forward(tokens: readonly Int32Array[], options: { train?: boolean } = {}): PolicyForward {
    const { cfg, w, profiler: prof } = this.net;
    const internal = this.vocab.isIdentity ? tokens : tokens.map((x) => this.vocab.toInternal(x));
    const { batch, ws } = this.net.runTrunk(internal, options.train ?? false);
    let t = prof ? prof.now() : 0;
    linearForward({ out: ws.logits, inp: ws.lnf, weight: w.lmHead!, n: batch.n, inF: cfg.dModel, outF: cfg.vocabSize });
    this.vocab.maskLogits(ws.logits, batch.n);
    applySamplingTransform({
      logits: ws.logits,
      targets: batch.targets,
      n: batch.n,
      v: cfg.vocabSize,
      ...this.sampling,
    });
    if (prof) t = prof.lap('linear', t);
    logprobForward({
      probs: ws.logits,
      targets: batch.targets,
      logprobs: ws.lp,
      entropies: ws.ent,
      n: batch.n,
      v: cfg.vocabSize,
    });
    if (prof) prof.lap('logprob', t);
    return { logprobs: unpackShifted(ws.lp, batch), entropies: unpackShifted(ws.ent, batch) };
  }

  backward(grads: { logprobs: readonly Float32Array[]; entropies?: readonly Float32Array[] }): void {
    const { cfg, w, profiler: prof } = this.net;
    const { batch, ws } = this.net.takePending();
    const { n } = batch;
    packShifted({ rows: ws.dlp, grads: grads.logprobs, batch, what: 'logprob' });
    if (grads.entropies) packShifted({ rows: ws.dent, grads: grads.entropies, batch, what: 'entropy' });
    let t = prof ? prof.now() : 0;
    ws.dlogits.fill(0, 0, n * cfg.vocabSize);
    logprobBackward({
      dlogits: ws.dlogits,
      probs: ws.logits,
      targets: batch.targets,
      dlogprobs: ws.dlp,
      dentropies: grads.entropies ? ws.dent : null,
      entropies: ws.ent,
      n,
      v: cfg.vocabSize,
    });
    temperatureBackward({ dlogits: ws.dlogits, n, v: cfg.vocabSize, temperature: this.sampling.temperature });
    // The pinned unknown logit is a constant: no gradient reaches its row of lm_head.
    const unk = this.vocab.unknown;
    if (unk !== null) for (let r = 0; r < n; r++) ws.dlogits[r * cfg.vocabSize + unk] = 0;
    if (prof) t = prof.lap('logprob', t);
    ws.dlnf.fill(0, 0, n * cfg.dModel);
    linearBackward({
      dinp: ws.dlnf,
      // Under LoRA adapters (net.weightGrad) the LM head is frozen: its V x C gradient is skipped.
      dweight: this.net.weightGrad ? null : this.net.g.lmHead!,
      dout: ws.dlogits,
      inp: ws.lnf,
      weight: w.lmHead!,
      n,
      inF: cfg.dModel,
      outF: cfg.vocabSize,
    });
    if (prof) prof.lap('linear', t);
    this.net.backwardTrunk(batch, ws);
  }

  step(): { gradNorm: number; lr: number } {
    return this.net.step();
  }
}
