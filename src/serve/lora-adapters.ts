import type { SampleRequest, SampleResult, SamplingParams } from '../contracts/index.ts';
import { baseWeightsHash } from '../model/lora/base-hash.ts';
import {
  AdapterMismatchError,
  AdapterNotFoundError,
  mergePeftWeights,
  readPeftWeights,
  type PeftWeights,
} from '../model/lora/peft-merge.ts';
import type { PolicyModel } from '../model/network/policy.ts';
import type { WeightPrecision } from '../model/network/weight-precision.ts';
import { ModelSampler } from '../model/sampler/sampler.ts';
import { topLogprobs, type PositionLogprobs, type ScoreSampling } from '../model/sampler/top-logprobs.ts';
import { Rng } from '../util/random.ts';
import { HttpError } from './http-guard.ts';

/** Adapters held at once by default (crl serve --max-loras); a trainer keeps two loaded. */
export const DEFAULT_MAX_LORAS = 4;

/** One loaded adapter: where it was read from, and its A and B (read once: the files may change after). */
interface Loaded {
  path: string;
  weights: PeftWeights;
}

/**
 * The LoRA adapters `crl serve` holds (vLLM's /v1/load_lora_adapter, lora-routes.ts), each served
 * as a model by its name. Memory: the base stays as it is and answers its own name; beside it one
 * more copy of the model holds the base merged with one adapter at a time (W0 + (alpha / r) B A,
 * model/lora/peft-merge.ts: the trainer's merge, so the bits of its merged checkpoint). Every
 * loaded adapter answers: a batch for another adapter than the one merged re-merges first (one
 * pass over the adapted matrices), so requests that alternate between adapters pay that pass each
 * time, and a trainer, which samples one version at a time, pays it once per version. An adapter's
 * A and B stay in memory (a few MB) until it is unloaded; at most `max` at once.
 */
export class ServedAdapters {
  private readonly loaded = new Map<string, Loaded>();
  /** The merged copy, made at the first adapter request; `holds` names the adapter in it. */
  private slot: { policy: PolicyModel; sampler: ModelSampler; holds: string | null } | null = null;
  /** The base's weight hash (crl_adapter.json's check), computed once per base weights. */
  private hash: string | null = null;

  constructor(
    private readonly o: {
      base: PolicyModel;
      /** The base sampler's precision: the merged copy samples in the same. */
      precision: WeightPrecision;
      seed: number;
      max: number;
    },
  ) {}

  has(name: string): boolean {
    return this.loaded.has(name);
  }

  list(): { name: string; path: string }[] {
    return [...this.loaded].map(([name, l]) => ({ name, path: l.path }));
  }

  /**
   * Reads and checks the adapter in `dir` (a real path the caller allowed) and serves it as
   * `name`; `inplace` replaces one loaded under that name. Throws HttpError in vLLM's statuses:
   * 404 when `dir` holds no adapter, 400 when it does not fit the base or the name is taken.
   */
  load(o: { name: string; dir: string; requested: string; inplace: boolean }): { bytes: number } {
    if (this.loaded.has(o.name) && !o.inplace)
      throw new HttpError(
        400,
        `The lora adapter '${o.name}' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.`,
        {},
        'InvalidUserInput',
      );
    if (!this.loaded.has(o.name) && this.loaded.size >= this.o.max)
      throw new HttpError(
        400,
        `Loading lora ${o.name} failed: ${this.o.max} adapters are loaded, the most this server holds (crl serve --max-loras); unload one first`,
      );
    let weights: PeftWeights;
    try {
      weights = readPeftWeights({ dir: o.dir, net: this.o.base.net, baseSha256: () => this.baseHash() });
    } catch (e) {
      if (e instanceof AdapterNotFoundError) throw notFound(o.name, o.requested);
      if (e instanceof AdapterMismatchError) throw new HttpError(400, `Loading lora ${o.name} failed: ${e.message}`);
      throw e;
    }
    this.loaded.set(o.name, { path: o.requested, weights });
    if (this.slot?.holds === o.name) this.slot.holds = null; // replaced in place: merge it again
    return { bytes: weights.bytes };
  }

  /** 404 in vLLM's words when `name` is not loaded. */
  unload(name: string): void {
    if (!this.loaded.delete(name))
      throw new HttpError(404, `The lora adapter '${name}' cannot be found.`, {}, 'NotFoundError');
    if (this.slot?.holds === name) this.slot.holds = null;
  }

  /** The base's weights were swapped (/update_weights_from_disk): merges and the hash are redone on next use. */
  baseChanged(): void {
    this.hash = null;
    if (this.slot) this.slot.holds = null;
  }

  sample(name: string, requests: readonly SampleRequest[], params: SamplingParams): Promise<SampleResult[]> {
    // Merge and sample in one synchronous stretch: no other batch can re-merge in between.
    const slot = this.merged(name);
    return Promise.resolve(slot.sampler.sampleSync(requests, params));
  }

  score(name: string, seq: readonly number[], from: number, k: number, sampling?: ScoreSampling): PositionLogprobs[] {
    return topLogprobs({ policy: this.merged(name).policy, seq, from, k, ...(sampling ? { sampling } : {}) });
  }

  private baseHash(): string {
    this.hash ??= baseWeightsHash(this.o.base.net.params);
    return this.hash;
  }

  /** The merged copy holding `name` (404 when it is not loaded: unloaded while its request waited). */
  private merged(name: string): { policy: PolicyModel; sampler: ModelSampler } {
    const adapter = this.loaded.get(name);
    if (!adapter) throw new HttpError(404, `The model \`${name}\` does not exist.`);
    if (!this.slot) {
      const policy = this.o.base.copyForSampling();
      const sampler = new ModelSampler({ policy, rng: new Rng(this.o.seed), precision: this.o.precision });
      this.slot = { policy, sampler, holds: null };
    }
    if (this.slot.holds !== name) {
      mergePeftWeights({ weights: adapter.weights, base: this.o.base.net.params, into: this.slot.policy.net.params });
      this.slot.policy.net.markWeightsChanged(); // the sampler's KV cache and prepared weights start over
      this.slot.holds = name;
    }
    return this.slot;
  }
}

/** vLLM's answer for a lora_path with no adapter (and, here, one outside --weights-dir: the same words). */
export function notFound(name: string, requested: string): HttpError {
  return new HttpError(404, `Loading lora ${name} failed: No adapter found for ${requested}`, {}, 'NotFoundError');
}
