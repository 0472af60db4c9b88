/**
 * A PEFT adapter put on a base by an engine that serves adapters (crl serve's
 * /v1/load_lora_adapter, docs/lora.md): read once, checked against the base it goes on, and merged
 * as W0 + (alpha / r) B A by the trainer's own per-matrix merge (lora-math.ts loraMerge). The
 * same function on the same base and the same A and B gives the same bits, so an engine serves a
 * trainer's adapter with exactly the weights of the trainer's merged checkpoint.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tensorToF32 } from '../formats/hf-import.ts';
import { checkFinite, openSafetensors, type SafetensorsFile } from '../formats/safetensors.ts';
import type { ModelConfig } from '../network/config.ts';
import type { TensorSpec } from '../network/weights.ts';
import { loraMatrices, loraProblem, loraScale, type LoraMatrix, type LoraSettings } from './lora-config.ts';
import { loraMerge } from './lora-math.ts';
import { hasPeftAdapter, PEFT_FILES, peftKey, readPeftAdapterInfo } from './peft-files.ts';

/** The directory holds no adapter (no adapter_config.json): what vLLM calls "No adapter found". */
export class AdapterNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdapterNotFoundError';
  }
}

/** The directory holds an adapter that cannot go on this base (settings, shapes, files, base hash). */
export class AdapterMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdapterMismatchError';
  }
}

/** An adapter's A and B in f32, matrix by matrix in loraMatrices order. */
export interface PeftWeights {
  settings: LoraSettings;
  matrices: readonly LoraMatrix[];
  a: readonly Float32Array[]; // [r, I] each
  b: readonly Float32Array[]; // [O, r] each
  /** What A and B hold in memory. */
  bytes: number;
}

/**
 * Reads the adapter in `dir` for a base laid out as `net`, or throws AdapterNotFoundError /
 * AdapterMismatchError with a message that says what does not fit. `baseSha256` is the base's
 * weight hash (base-hash.ts), asked only when the adapter records the base it was trained on
 * (crl_adapter.json; an adapter from elsewhere has none, and is checked by its shapes alone).
 */
export function readPeftWeights({
  dir,
  net,
  baseSha256,
}: {
  dir: string;
  net: { specs: readonly TensorSpec[]; cfg: ModelConfig };
  baseSha256: () => string;
}): PeftWeights {
  if (!hasPeftAdapter(dir)) throw new AdapterNotFoundError(`${dir} holds no ${PEFT_FILES.config}`);
  const mismatch = (why: string) => new AdapterMismatchError(why);
  let info;
  try {
    info = readPeftAdapterInfo(dir);
  } catch (e) {
    throw mismatch((e as Error).message);
  }
  const { settings } = info;
  const matrices = loraMatrices({ specs: net.specs, cfg: net.cfg, targets: settings.targets });
  const problem = loraProblem(settings, matrices);
  if (problem) throw mismatch(`r ${settings.rank} does not fit the served model: ${problem}`);
  const path = join(dir, PEFT_FILES.model);
  if (!existsSync(path)) throw mismatch(`${dir} holds ${PEFT_FILES.config} but no ${PEFT_FILES.model}`);
  let file: SafetensorsFile;
  try {
    file = openSafetensors(path, path);
  } catch (e) {
    throw mismatch((e as Error).message);
  }
  const r = settings.rank;
  const wanted = new Set<string>();
  const read = (m: LoraMatrix, which: 'lora_A' | 'lora_B', shape: [number, number]): Float32Array => {
    const name = peftKey(m, which);
    wanted.add(name);
    const t = file.tensors.get(name);
    if (!t) throw mismatch(`${path}: no tensor ${name} (target_modules names ${m.target})`);
    if (t.shape.length !== 2 || t.shape[0] !== shape[0] || t.shape[1] !== shape[1])
      throw mismatch(
        `${path}: ${name} is [${t.shape.join(', ')}]; r ${r} on the served model's ${m.target} [${m.out}, ${m.in}] needs [${shape.join(', ')}]`,
      );
    try {
      const data = tensorToF32(t, name, path);
      checkFinite({ data, name, what: path });
      return data;
    } catch (e) {
      throw mismatch((e as Error).message);
    }
  };
  const a = matrices.map((m) => read(m, 'lora_A', [r, m.in]));
  const b = matrices.map((m) => read(m, 'lora_B', [m.out, r]));
  // A tensor the config does not account for (another layer count, a module left out of
  // target_modules) means the adapter was made for another model.
  const extra = [...file.tensors.keys()].filter((k) => !wanted.has(k));
  if (extra.length)
    throw mismatch(
      `${path}: ${extra.length} tensor(s) the served model has no place for, e.g. ${extra[0]} (made for another model?)`,
    );
  // Last: a base of another shape is told by its shapes, which say more than a hash.
  if (info.baseSha256 !== null) {
    const served = baseSha256();
    if (served !== info.baseSha256)
      throw mismatch(
        `the adapter was trained on another base (${PEFT_FILES.crl}: weights hash ${info.baseSha256.slice(0, 12)}; the served model's is ${served.slice(0, 12)})`,
      );
  }
  const bytes = [...a, ...b].reduce((s, x) => s + x.byteLength, 0);
  return { settings, matrices, a, b, bytes };
}

/**
 * `into` := the base with W0 + (alpha / r) B A on every adapted matrix. `base` and `into` are the
 * network's flat parameters (the same layout); `scratch` needs the largest adapted matrix's size.
 */
export function mergePeftWeights({
  weights,
  base,
  into,
}: {
  weights: PeftWeights;
  base: Float32Array;
  into: Float32Array;
}): void {
  into.set(base);
  const { rank: r } = weights.settings;
  const scale = loraScale(weights.settings);
  const scratch = new Float32Array(Math.max(0, ...weights.matrices.map((m) => m.out * m.in)));
  weights.matrices.forEach((m, k) => {
    const size = m.out * m.in;
    loraMerge({
      w: into.subarray(m.offset, m.offset + size),
      base: base.subarray(m.offset, m.offset + size),
      a: weights.a[k]!,
      b: weights.b[k]!,
      scratch,
      shape: { o: m.out, i: m.in, r, scale },
    });
  });
}
