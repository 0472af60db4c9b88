import { existsSync } from 'node:fs';
import { freemem, totalmem } from 'node:os';
import { checkGgufFile } from '../model/formats/gguf-check.ts';
import type {
  ControlledEvaluateInputItem,
  Llama,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
  Token,
} from 'node-llama-cpp';

/**
 * llama.cpp through node-llama-cpp: its prebuilt CPU binary (never a GPU build, never a build from
 * source or a download at run time; docs/decisions/0018-outside-engines.md), one model file, contexts
 * with several sequences evaluated in one batch.
 */

/** A GGUF file llama.cpp could not open, or a request it cannot serve; the message says which. */
export class LlamaCppError extends Error {
  override readonly name = 'LlamaCppError';
}

/** node-llama-cpp brands token ids; ours are plain integers of the same vocabulary. */
export const asToken = (id: number): Token => id as Token;
export const asTokens = (ids: readonly number[]): Token[] => ids.map(asToken);

let llamaPromise: Promise<Llama> | null = null;

/** The llama.cpp runtime, loaded once per process. */
export function llamaRuntime(): Promise<Llama> {
  // Imported here, not at the top: every crl command loads this module, few use llama.cpp, and
  // the import alone costs about 0.3 s of CPU.
  llamaPromise ??= import('node-llama-cpp')
    .then(({ getLlama, LlamaLogLevel }) =>
      getLlama({
        gpu: false,
        build: 'never',
        usePrebuiltBinaries: true,
        skipDownload: true,
        progressLogs: false,
        logLevel: LlamaLogLevel.error,
      }),
    )
    .catch((e: unknown) => {
      llamaPromise = null;
      throw new LlamaCppError(
        `cannot load llama.cpp (node-llama-cpp's prebuilt CPU binary for ${process.platform}-${process.arch}): ${(e as Error).message}`,
      );
    });
  return llamaPromise;
}

export async function loadGgufModel(path: string): Promise<LlamaModel> {
  if (!existsSync(path)) throw new LlamaCppError(`no such GGUF file: ${path}`);
  // Header counts and weights checked first: a corrupt header would hang the loader, NaN weights sample silently.
  checkGgufFile(path);
  const llama = await llamaRuntime();
  try {
    return await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  } catch (e) {
    throw new LlamaCppError(`llama.cpp cannot load ${path}: ${(e as Error).message}`);
  }
}

/**
 * Threads for llama.cpp: CRL_THREADS when set (the variable that sizes the embedded engine's pool),
 * else 1. llama.cpp's workers spin at a barrier after every op, so on a shared machine a second
 * thread whose core is busy stalls the first: 64 tokens took 6 ms on one thread and 1.2-2.9 s on
 * two while other work loaded both cores.
 */
export function llamaCppThreads(): number {
  const n = Number(process.env.CRL_THREADS);
  return Number.isInteger(n) && n > 0 ? n : 1;
}

const gb = (bytes: number) => `${(bytes / 1e9).toFixed(2)} GB`;

/** node-llama-cpp's estimate of the memory a context takes (KV cache and compute buffers); null if it has none. */
function contextBytes(
  model: LlamaModel,
  o: { contextSize: number; sequences: number; batchSize: number },
): number | null {
  try {
    return model.fileInsights.estimateContextResourceRequirements({ ...o, modelGpuLayers: 0 }).cpuRam;
  } catch {
    return null;
  }
}

/**
 * A context of `sequences` parallel sequences of `contextSize` tokens each. Batches are sized so
 * that one call can feed every sequence its whole prompt. A context larger than the machine's
 * memory is refused before llama.cpp tries, and any refusal names the sizes and the estimate.
 */
export async function createContext({
  model,
  contextSize,
  sequences,
}: {
  model: LlamaModel;
  contextSize: number;
  sequences: number;
}): Promise<LlamaContext> {
  const batchSize = Math.max(512, Math.min(contextSize * sequences, 8192));
  const need = contextBytes(model, { contextSize, sequences, batchSize });
  const what = `a llama.cpp context of ${sequences} x ${contextSize} tokens`;
  const estimate =
    need === null
      ? ''
      : ` (about ${gb(need)} by node-llama-cpp's estimate; ${gb(freemem())} free of ${gb(totalmem())})`;
  if (need !== null && need > totalmem())
    throw new LlamaCppError(
      `${what} needs about ${gb(need)} (node-llama-cpp's estimate), more than this machine's ${gb(totalmem())} of memory; use a smaller context window (--context) or fewer parallel episodes`,
    );
  try {
    return await model.createContext({
      contextSize,
      sequences,
      batchSize,
      flashAttention: false,
      threads: llamaCppThreads(),
      // The KV cache in the file's own precision: llama.cpp's default f16 cache would round an
      // f32 model's keys and values (|Δ log-prob| ~1e-3 instead of ~1e-5).
      experimentalKvCacheKeyType: 'currentQuant',
      experimentalKvCacheValueType: 'currentQuant',
    });
  } catch (e) {
    throw new LlamaCppError(`${what} cannot be created${estimate}: ${(e as Error).message}`);
  }
}

/**
 * The model's next-token distribution after each of `positions` of `tokens` (evaluated from an
 * empty sequence), as log-probabilities over the whole vocabulary: Float64Array [V] per position.
 * llama.cpp reports probabilities (softmax of the raw logits in float32, temperature 0 = no
 * sampler transform); their logs agree with a log-softmax to float32 rounding.
 */
export async function nextTokenLogprobs({
  sequence,
  tokens,
  positions,
  vocabSize,
}: {
  sequence: LlamaContextSequence;
  tokens: readonly number[];
  positions: readonly number[];
  vocabSize: number;
}): Promise<Float64Array[]> {
  const want = new Set(positions);
  await sequence.clearHistory();
  const input: ControlledEvaluateInputItem[] = tokens.map((t, i) =>
    want.has(i) ? [asToken(t), { generateNext: { probabilities: true } }] : asToken(t),
  );
  const out = await sequence.controlledEvaluate(input);
  return positions.map((p) => {
    const probs = out[p]?.next.probabilities;
    if (!probs) throw new LlamaCppError(`llama.cpp returned no probabilities at position ${p}`);
    const lp = new Float64Array(vocabSize).fill(-Infinity);
    for (const [tok, pr] of probs) if (tok < vocabSize) lp[tok] = Math.log(pr);
    return lp;
  });
}

/** The number of token ids the model's vocabulary holds (rows of its output layer). */
export function modelVocabSize(model: LlamaModel): number {
  const tokens = model.fileInfo.metadata.tokenizer?.ggml?.tokens;
  if (!tokens) throw new LlamaCppError(`${model.filename ?? 'the GGUF file'} has no tokenizer.ggml.tokens`);
  return tokens.length;
}
