import { resolve } from 'node:path';
import { writeVocabMap } from '../../model/formats/checkpoint-tokenizer.ts';
import type { PolicyForward, TrainableCritic, TrainablePolicy } from '../../contracts/index.ts';
import type { ModelConfig } from '../../model/network/config.ts';
import type { CriticModel } from '../../model/network/critic.ts';
import { toHfConfig } from '../../model/formats/hf-config.ts';
import type { LoraAdapter } from '../../model/lora/lora-adapter.ts';
import type { LlamaNetwork } from '../../model/network/network.ts';
import type { PolicyModel } from '../../model/network/policy.ts';
import { UNKNOWN_LOGIT, type VocabMap } from '../../model/tokenizer/vocab-map.ts';
import type { z } from 'zod';
import { bytes, concat, floats, netBuffers, netSpec, split } from './torch-wire.ts';
import { applyLoraPull, loraPolicyPayload } from './torch-lora-wire.ts';
import { killQuietly, lastLine, TorchTrainerError } from './torch-trainer-error.ts';

import { PipeClosedError, SyncPipe, type Frame, type PipeTarget } from './sync-pipe.ts';
import { CRL_TORCH_PYTHON_PATH, DEFAULT_TORCH_COMMAND, parseTrainerUrl, torchrunCommand } from './trainer-target.ts';
import {
  EmptyReplySchema,
  FailureReplySchema,
  gradNormValue,
  type HeldElements,
  HelloReplySchema,
  InitReplySchema,
  PullReplySchema,
  StepReplySchema,
  type TrainerInfo,
  type TrainerTiming,
} from './torch-replies.ts';

export { TorchTrainerError } from './torch-trainer-error.ts';
export type { HeldElements, TrainerInfo, TrainerTiming } from './torch-replies.ts';

/** Protocol version this client speaks (python/crl_torch/__init__.py PROTOCOL_VERSION). */
const PROTOCOL_VERSION = 1;

type NetKind = 'policy' | 'critic';

/**
 * The PyTorch trainer process behind the TrainablePolicy / TrainableCritic contracts. Only
 * per-token data crosses the pipe during training (token ids in, log-probs / entropies / values
 * out, their gradients in); weights and AdamW moments cross at init, on pull (the sampler's
 * weights after an update, checkpoints) and never activations, which stay in the trainer.
 */
export class TorchTrainer {
  readonly policy: TrainablePolicy;
  readonly critic: TrainableCritic;
  private readonly pipe: SyncPipe;
  private readonly label: string;
  private readonly timeoutMs: number;
  private pid = 0;
  private readonly local: boolean;
  private timing: TrainerTiming = { requests: 0, computeS: 0, wireS: 0 };
  private vocab: VocabMap | null = null;
  /** The policy's LoRA adapters (init), whose A and B the trainer steps; null: every weight. */
  private lora: LoraAdapter | null = null;
  info: TrainerInfo = { torch: '', model: '', device: '', worldSize: 1, pid: 0, shard: 'replicate', features: [] };

  private constructor(options: { target: PipeTarget; timeoutMs: number; env: NodeJS.ProcessEnv }) {
    const { target } = options;
    this.local = 'command' in target;
    this.label =
      'command' in target
        ? `the torch trainer (${target.command.join(' ')})`
        : `the torch trainer at tcp://${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
    this.timeoutMs = options.timeoutMs;
    // Its stderr is kept, not echoed: echoed lines would land after crl's own error line, and the
    // last of them is quoted in that error.
    this.pipe = new SyncPipe({ target, env: options.env });
    this.policy = {
      forward: (tokens, o) => this.forwardPolicy(tokens, o?.train ?? false),
      backward: (g) => this.backward('policy', g.entropies ? [g.logprobs, g.entropies] : [g.logprobs]),
      step: () => this.step('policy'),
    };
    this.critic = {
      forward: (tokens, o) => ({ values: this.forward('critic', tokens, o?.train ?? false)[0]! }),
      backward: (g) => this.backward('critic', [g.values]),
      step: () => this.step('critic'),
    };
  }

  /**
   * Starts the process (`command`, or `procs` of them under torchrun, or connects to the trainer
   * listening at `url`) and checks it speaks this protocol. `pythonPath` (default: this checkout's
   * python/ folder) is put first on a started child's PYTHONPATH so `-m crl_torch` finds the package.
   */
  static start(
    options: {
      command?: readonly string[];
      procs?: number;
      url?: string;
      timeoutMs?: number;
      pythonPath?: string;
    } = {},
  ): TorchTrainer {
    const env = {
      ...process.env,
      PYTHONPATH: [options.pythonPath ?? CRL_TORCH_PYTHON_PATH, process.env.PYTHONPATH].filter(Boolean).join(':'),
    };
    const procs = options.procs ?? 1;
    const address = options.url === undefined ? null : parseTrainerUrl(options.url);
    if (options.url !== undefined && address === null)
      throw new TorchTrainerError(`the trainer URL ${options.url} is not tcp://HOST:PORT`);
    const target: PipeTarget = address
      ? address
      : { command: options.command ?? (procs > 1 ? torchrunCommand(procs) : DEFAULT_TORCH_COMMAND) };
    const t = new TorchTrainer({ target, timeoutMs: options.timeoutMs ?? 600_000, env });
    const hello = t.call({ op: 'hello' }, [], HelloReplySchema);
    if (hello.header.protocol !== PROTOCOL_VERSION)
      throw new TorchTrainerError(
        `${t.label} speaks protocol ${hello.header.protocol}, crl speaks ${PROTOCOL_VERSION}; use the crl_torch package of this checkout`,
      );
    t.pid = hello.header.pid;
    t.info = {
      torch: hello.header.torch,
      device: hello.header.device,
      worldSize: hello.header.worldSize ?? 1,
      pid: hello.header.pid,
      shard: hello.header.shard ?? 'replicate',
      model: hello.header.model ?? 'built-in',
      features: hello.header.features ?? [],
    };
    return t;
  }

  /**
   * Loads the models' weights and AdamW state (moments and step) into the trainer; answers how
   * many elements of each network every rank holds (index = rank; sharded, each holds its part).
   * With `lora` (adapters on models.policy, lora-adapter.ts) the policy's base is sent frozen with
   * the adapters' A, B and their AdamW state, and the trainer steps only those (torch-lora-wire.ts).
   */
  init(models: { policy: PolicyModel; critic: CriticModel | null; lora?: LoraAdapter | null }): {
    held: Partial<Record<NetKind, HeldElements>>;
  } {
    const cfg = models.policy.config;
    const lora = models.lora ?? null;
    if (lora && !this.info.features.includes('lora'))
      throw new TorchTrainerError(
        `${this.label} does not train LoRA adapters (an older crl_torch); use the crl_torch package of this checkout`,
      );
    this.vocab = models.policy.vocab;
    this.lora = lora;
    // The engine's own RoPE table [P, D/2] (scaling applied), so both sides rotate by the same floats.
    const { rope } = models.policy.net;
    const policy = lora
      ? loraPolicyPayload(models.policy.net, lora)
      : { spec: netSpec(models.policy.net), buffers: netBuffers(models.policy.net) };
    const nets: Record<string, unknown> = { policy: policy.spec };
    const buffers = [bytes(rope.cos), bytes(rope.sin), ...policy.buffers];
    if (models.critic) {
      nets.critic = netSpec(models.critic.net);
      buffers.push(...netBuffers(models.critic.net));
    }
    const header = {
      op: 'init',
      config: cfg satisfies ModelConfig,
      hfConfig: toHfConfig(cfg),
      rope: { positions: rope.maxPositions, half: rope.half },
      vocab: { unknown: this.vocab.unknown, unknownLogit: UNKNOWN_LOGIT },
      nets,
    };
    const send = () => this.call(header, buffers, InitReplySchema);
    const r = lora ? lora.withBaseWeights(send) : send();
    delete this.info.adapters;
    if (lora) {
      const runs = r.header.adapters?.policy;
      if (runs === undefined) throw new TorchTrainerError(`${this.label} took the policy without its LoRA adapters`);
      this.info.adapters = runs;
    }
    return { held: r.header.held ?? {} };
  }

  /**
   * The trainer's LoRA adapters (and with optimizer, their AdamW moments and step) into `lora`,
   * merged onto its base: the policy's network then holds the trainer's policy, as after pullInto.
   */
  pullLora(lora: LoraAdapter, { optimizer }: { optimizer: boolean }): void {
    const r = this.call({ op: 'pull', net: 'policy', optimizer }, [], PullReplySchema);
    const bufs = r.buffers.map((b) => floats(b));
    if (bufs.length !== (optimizer ? 3 : 1) || !applyLoraPull(lora, bufs, r.header.step))
      throw new TorchTrainerError(
        `${this.label} sent LoRA adapters that do not match the policy's ${lora.params.length} adapter parameters`,
      );
  }

  /** Copies the trainer's weights (and with optimizer, AdamW moments and step) into a model. */
  pullInto(kind: NetKind, net: LlamaNetwork, { optimizer }: { optimizer: boolean }): void {
    if (kind === 'policy' && this.lora)
      throw new TorchTrainerError(`${this.label} trains the policy's LoRA adapters: pull them with pullLora`);
    const r = this.call({ op: 'pull', net: kind, optimizer }, [], PullReplySchema);
    const want = optimizer ? 3 : 1;
    const bufs = r.buffers.map((b) => floats(b));
    if (bufs.length !== want || bufs.some((b) => b.length !== net.params.length))
      throw new TorchTrainerError(
        `${this.label} sent ${kind} weights that do not match the model's ${net.params.length} parameters`,
      );
    net.params.set(bufs[0]!);
    if (optimizer) {
      net.optimizer.state.m.set(bufs[1]!);
      net.optimizer.state.v.set(bufs[2]!);
      net.optimizer.state.step = r.header.step;
    }
    net.markWeightsChanged();
  }

  /**
   * Writes the policy as a Hugging Face directory (config.json, model.safetensors in float32) plus
   * crl_tokenizer.json (which tokenizer, which vocabulary ids), so `crl serve`, `--init` and
   * `--policy` load it as they load an exported model.
   */
  saveHf(dir: string): void {
    const vocab = this.vocab;
    if (!vocab) throw new TorchTrainerError(`${this.label} has no model yet (init first)`);
    this.call({ op: 'save_hf', dir: resolve(dir) }, [], EmptyReplySchema);
    writeVocabMap(dir, vocab);
  }

  /** The time spent in requests since the last call: the trainer's handlers, and the rest (the wire). */
  takeTiming(): TrainerTiming {
    const t = this.timing;
    this.timing = { requests: 0, computeS: 0, wireS: 0 };
    return t;
  }

  /** Asks the trainer to exit and stops the worker; safe to call twice. */
  async close(): Promise<void> {
    try {
      this.call({ op: 'shutdown' }, [], EmptyReplySchema, 10_000);
    } catch {
      // already gone: nothing to stop
    }
    await this.pipe.close();
  }

  private forwardPolicy(tokens: readonly Int32Array[], train: boolean): PolicyForward {
    const [logprobs, entropies] = this.forward('policy', tokens, train);
    return { logprobs: logprobs!, entropies: entropies! };
  }

  private forward(kind: NetKind, tokens: readonly Int32Array[], train: boolean): Float32Array[][] {
    const vocab = this.vocab;
    if (!vocab) throw new TorchTrainerError(`${this.label} has no model yet (init first)`);
    const lengths = tokens.map((t) => t.length);
    const flat = new Int32Array(lengths.reduce((a, b) => a + b, 0));
    let o = 0;
    for (const t of tokens) {
      flat.set(vocab.isIdentity ? t : vocab.toInternal(t), o);
      o += t.length;
    }
    const r = this.call({ op: 'forward', net: kind, train, lengths }, [bytes(flat)], EmptyReplySchema);
    const want = kind === 'policy' ? 2 : 1;
    if (r.buffers.length !== want || r.buffers.some((b) => b.byteLength !== flat.length * 4))
      throw new TorchTrainerError(
        `${this.label} answered forward with arrays that do not match the ${lengths.length} sequences`,
      );
    return r.buffers.map((b) => split(floats(b), lengths));
  }

  private backward(kind: NetKind, grads: readonly (readonly Float32Array[])[]): void {
    this.call(
      { op: 'backward', net: kind },
      grads.map((g) => bytes(concat(g))),
      EmptyReplySchema,
    );
  }

  private step(kind: NetKind): { gradNorm: number; lr: number } {
    const r = this.call({ op: 'step', net: kind }, [], StepReplySchema);
    return { gradNorm: gradNormValue(r.header.gradNorm), lr: r.header.lr };
  }

  private call<S extends z.ZodType<Record<string, unknown>>>(
    header: Record<string, unknown>,
    buffers: Uint8Array[],
    schema: S,
    timeoutMs = this.timeoutMs,
  ): { header: z.infer<S>; buffers: Uint8Array[] } {
    const op = String(header.op);
    let reply: Frame;
    const t0 = performance.now();
    try {
      reply = this.pipe.request({ header, buffers }, timeoutMs);
    } catch (e) {
      if (!(e instanceof PipeClosedError)) throw e;
      // A hung local trainer is stopped; a remote one's pid means nothing on this machine.
      if (e.message.startsWith('gave no answer') && this.local && this.pid > 0) killQuietly(this.pid);
      const last = lastLine(this.pipe.stderr);
      throw new TorchTrainerError(`${this.label} ${e.message} during ${op}${last ? `: ${last}` : ''}`);
    }
    const roundTrip = (performance.now() - t0) / 1000;
    const seconds = typeof reply.header.seconds === 'number' ? Math.min(reply.header.seconds, roundTrip) : 0;
    this.timing.requests++;
    this.timing.computeS += seconds;
    this.timing.wireS += roundTrip - seconds;
    const failed = FailureReplySchema.safeParse(reply.header);
    if (failed.success) throw new TorchTrainerError(`${this.label} failed ${op}: ${failed.data.error}`);
    const parsed = schema.safeParse(reply.header);
    if (!parsed.success)
      throw new TorchTrainerError(
        `${this.label} answered ${op} with an unexpected reply: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      );
    return { header: parsed.data, buffers: reply.buffers };
  }
}
