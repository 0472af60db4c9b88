import { basename } from 'node:path';
import { ENGINE_PROTOCOLS } from '../adapters/engine-protocols.ts';
import { ADMIN_TOKEN_ENV, UPDATE_WEIGHTS_PATH } from '../adapters/engine-weights.ts';
import { resolveCheckpointDir } from '../experiments/evaluate/policy-source.ts';
import { loadPolicyDir } from '../model/formats/load-policy.ts';
import { ModelSampler } from '../model/sampler/sampler.ts';
import { tokenizerForCheckpoint } from '../model/tokenizer/tokenizer-match.ts';
import { topLogprobs } from '../model/sampler/top-logprobs.ts';
import type { PrecisionChoice, WeightPrecision } from '../model/network/weight-precision.ts';
import { mixSeed, Rng } from '../util/random.ts';
import { isLoopback } from './http-guard.ts';
import { DEFAULT_MAX_LORAS, ServedAdapters } from './lora-adapters.ts';
import type { ServerLimits } from './request-slots.ts';
import { startSamplerServer, type SamplerServer } from './sampler-server.ts';
import { ServeError } from './serve-error.ts';
import { loadServedWeights, weightRoots } from './weight-admin.ts';

export interface ServeCheckpointOptions {
  /** A checkpoint directory, or a run directory (its latest checkpoint). */
  policy: string;
  host?: string;
  /** 0 (the default) picks a free port; `ready.url` says which. */
  port?: number;
  /** The model name served (/v1/models); default: the directory name. */
  model?: string;
  /** Sampling seed (default 0). */
  seed?: number;
  /** Enables /update_weights_from_disk behind this bearer token; needs `weightsDirs`. */
  adminToken?: string;
  /** The directories /update_weights_from_disk may load checkpoints from. */
  weightsDirs?: readonly string[];
  /** Host names clients may use besides the bound address and localhost. */
  allowHosts?: readonly string[];
  /** The checkpoint's tokenizer by name or directory (default: its own; another one is refused). */
  tokenizer?: string;
  limits?: Partial<ServerLimits>;
  /** The label of the weights served at start (SGLang's --weight-version; default 'default'). */
  weightVersion?: string;
  /** The sampler's weight precision (model/network/weight-precision.ts; default 'auto'). */
  precision?: PrecisionChoice;
  /** LoRA adapters held at once (vLLM's /v1/load_lora_adapter, behind the admin token; default 4). */
  maxLoras?: number;
  /** Where the server's lines go (weight updates, internal errors). */
  log?: (line: string) => void;
}

/** The first stdout line of `crl serve`, once it listens (scripts and tests wait for it). */
export interface ServeReady {
  url: string;
  model: string;
  protocols: Record<string, string>;
}

export interface ServedCheckpoint {
  server: SamplerServer;
  ready: ServeReady;
  /** Risky settings, one line each, to show before the ready line. */
  warnings: string[];
  /** The --weights-dir directories as real paths (empty: weight loading disabled). */
  roots: string[];
  /** The precision the sampler reads its weight matrices in ('auto' resolved). */
  precision: WeightPrecision;
}

/** Below this an admin token is called out as guessable (16 hex digits are 64 bits). */
const MIN_TOKEN_LENGTH = 16;

/**
 * Puts a checkpoint behind the engine APIs in this process (what `crl serve` runs, and what a
 * rollout worker or a test can call): loads the policy, checks its tokenizer and that its weights
 * are finite, and starts the server with the embedded sampler, the teacher-forced scorer, and the
 * weight endpoint when a token is given. User mistakes throw ServeError (or the model layer's own
 * errors, e.g. TokenizerMismatchError) with a message that says what to do.
 */
export async function serveCheckpoint(options: ServeCheckpointOptions): Promise<ServedCheckpoint> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 0;
  const token = options.adminToken;
  if (token !== undefined && token.length === 0) throw new ServeError('the admin token must not be empty');
  if (token && (options.weightsDirs ?? []).length === 0)
    throw new ServeError(
      `an admin token enables ${UPDATE_WEIGHTS_PATH}, which loads only from the directories named with --weights-dir; name at least one`,
    );
  const roots = weightRoots(options.weightsDirs ?? []);
  let policy;
  try {
    policy = (await loadPolicyDir(resolveCheckpointDir(options.policy))).policy;
  } catch (e) {
    throw new ServeError(`--policy: ${(e as Error).message}`);
  }
  // Requests and responses speak the tokenizer's real ids (a trimmed model maps them, docs/decisions/0013).
  const loaded = tokenizerForCheckpoint({
    what: `checkpoint ${options.policy}`,
    ref: policy.vocab.tokenizer,
    given: options.tokenizer,
  });
  const { tokenizer } = loaded;
  if (!policy.net.params.every(Number.isFinite))
    throw new ServeError(
      `--policy ${options.policy} holds non-finite weights (NaN or infinity); serve an earlier checkpoint`,
    );
  const served = policy;
  const model = options.model ?? basename(options.policy);
  const sampler = new ModelSampler({
    policy,
    rng: new Rng(mixSeed(options.seed ?? 0, 3)),
    precision: options.precision ?? 'auto',
  });
  // With the admin token, adapters load from the --weights-dir directories as weights do.
  const adapters = token
    ? new ServedAdapters({
        base: served,
        precision: sampler.precision,
        seed: mixSeed(options.seed ?? 0, 3),
        max: options.maxLoras ?? DEFAULT_MAX_LORAS,
      })
    : undefined;
  let server;
  try {
    server = await startSamplerServer({
      sampler,
      tokenizer,
      chat: loaded,
      vocabSize: tokenizer.vocabSize,
      maxModelLen: policy.config.maxSeqLen,
      host,
      port,
      model,
      score: (seq, from, k, sampling) =>
        topLogprobs({ policy: served, seq, from, k, ...(sampling ? { sampling } : {}) }),
      ...(token
        ? {
            admin: {
              token,
              loadWeights: (path: string) =>
                loadServedWeights({ policy: served, tokenizer: loaded, roots, requested: path }),
            },
          }
        : {}),
      ...(adapters ? { lora: { adapters, roots } } : {}),
      allowHosts: options.allowHosts ?? [],
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.weightVersion ? { weightVersion: options.weightVersion } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
  } catch (e) {
    throw new ServeError(`cannot listen on ${host}:${port}: ${(e as Error).message}`);
  }
  const ready: ServeReady = {
    url: server.url,
    model,
    protocols: Object.fromEntries(Object.entries(ENGINE_PROTOCOLS).map(([k, p]) => [k, p.path])),
  };
  const warnings: string[] = [];
  if (!isLoopback(host))
    warnings.push(
      `listening on ${host}, reachable from other machines: anyone who can connect can sample from this model; use --host 127.0.0.1 unless that is what you want`,
    );
  if (token && token.length < MIN_TOKEN_LENGTH)
    warnings.push(
      `the admin token has ${token.length} characters, short enough to guess; use at least ${MIN_TOKEN_LENGTH} random ones (openssl rand -hex 16)`,
    );
  if (!token && roots.length > 0)
    warnings.push(
      `--weights-dir without an admin token: ${UPDATE_WEIGHTS_PATH} stays disabled (set ${ADMIN_TOKEN_ENV} or --admin-token)`,
    );
  return { server, ready, warnings, roots: token ? roots : [], precision: sampler.precision };
}
