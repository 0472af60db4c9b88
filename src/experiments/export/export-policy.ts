import { mkdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { hfVocab, loadPolicyDir } from '../../model/formats/load-policy.ts';
import { isHfModelDir } from '../../model/formats/hf-import.ts';
import { openHfWeights, readTensorF16, readTensorF32 } from '../../model/formats/hf-weights.ts';
import type { ModelConfig } from '../../model/network/config.ts';
import {
  ggufArchitecture,
  namedWeights,
  type GgufPrecision,
  readAll,
  writeGgufExport,
  type NamedWeights,
} from '../../model/formats/gguf-export.ts';
import { hfArchitectureName, toHfConfig } from '../../model/formats/hf-config.ts';
import { safetensorsChunks } from '../../model/formats/safetensors.ts';
import { writeVocabMap } from '../../model/formats/checkpoint-tokenizer.ts';
import { vocabMapMetadata } from '../../model/formats/gguf-vocab.ts';
import { CheckpointFormatError } from '../../model/formats/safetensors.ts';
import { tokenizerForCheckpoint } from '../../model/tokenizer/tokenizer-match.ts';
import { VocabMap } from '../../model/tokenizer/vocab-map.ts';
import { BUILTIN_TOKENIZERS } from '../../model/tokenizer/load-tokenizer.ts';
import { exportTokenizer } from './export-tokenizer.ts';
import { writeChunksAtomic, writeFileAtomic } from '../../util/atomic-write.ts';
import { resolveCheckpointDir } from '../evaluate/policy-source.ts';

/**
 * `crl export`: a policy (checkpoint directory, or a run directory's latest checkpoint) as a file
 * another engine loads: GGUF for llama.cpp (weights, tokenizer and chat template in one file), or
 * a Hugging Face model directory (config.json, model.safetensors, tokenizer files; weights only,
 * no optimizer or critic). docs/decisions/0018-outside-engines.md.
 */
export const EXPORT_FORMATS = ['gguf', 'hf'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** What `--format hf` writes into its directory. */
export const HF_EXPORT_FILES = [
  'config.json',
  'model.safetensors',
  'tokenizer.json',
  'tokenizer_config.json',
  'crl_tokenizer.json',
] as const;

export interface ExportResult {
  format: ExportFormat;
  out: string;
  precision: GgufPrecision;
  architecture: string;
  parameters: number;
  vocabSize: number;
  bytes: number;
  /** The tokenizer written with the weights: word, qwen3 or a directory. */
  tokenizer: string;
  /** What the reader should know (e.g. a pre-tokenizer llama.cpp does not know). */
  warnings: string[];
}

/** What an exporter needs from a policy: its shape and its weights by Hugging Face name. */
export interface PolicyWeights {
  cfg: ModelConfig;
  weights: NamedWeights;
  /** Where it came from, for general.name. */
  source: string;
  /** The tokenizer its ids belong to, and a trimmed vocabulary's real ids (vocab-map.ts). */
  vocab: VocabMap;
}

export async function loadPolicyWeights(path: string): Promise<PolicyWeights> {
  const dir = resolveCheckpointDir(path);
  if (isHfModelDir(dir)) return hfPolicyWeights(dir);
  const { policy } = await loadPolicyDir(dir);
  const net = policy.net;
  const weights = namedWeights(net);
  return { cfg: policy.config, weights, source: dir, vocab: policy.vocab };
}

/**
 * A Hugging Face directory's weights read lazily from its files, a chunk at a time, so an export
 * of any size holds one chunk and not the model (a 0.6B model's f32 weights are 2.4 GB).
 */
async function hfPolicyWeights(dir: string): Promise<PolicyWeights> {
  const { cfg, tensors } = await openHfWeights(dir);
  // A fresh array per read: the GGUF writer asks for 16 MiB at a time, the hf writer for whole tensors.
  const weights = new Map(
    [...tensors].map(([name, t]) => [
      name,
      {
        shape: t.shape,
        read: (start: number, count: number) => readTensorF32({ t, start, count }),
        readF16: (start: number, count: number, out: Uint16Array) => readTensorF16({ t, start, count, out }),
      },
    ]),
  );
  const vocab = (await hfVocab(dir, cfg.vocabSize)) ?? VocabMap.identity(cfg.vocabSize);
  return { cfg, weights, source: dir, vocab };
}

function generalName(source: string): string {
  // A checkpoint directory is named iter-NNNNNN inside <run>/checkpoints; name the run as well.
  const abs = resolve(source);
  const parent = basename(dirname(abs));
  return parent === 'checkpoints' ? `${basename(dirname(dirname(abs)))}/${basename(abs)}` : basename(abs);
}

export async function exportPolicy(options: {
  policy: string;
  format: ExportFormat;
  out: string;
  precision: GgufPrecision;
  /** word | qwen3 | a tokenizer directory: checked against the policy's own (the default). */
  tokenizer?: string | undefined;
}): Promise<ExportResult> {
  const { cfg, weights, source, vocab } = await loadPolicyWeights(options.policy);
  const given = options.tokenizer
    ? tokenizerForCheckpoint({ what: `policy ${source}`, ref: vocab.tokenizer, given: options.tokenizer }).name
    : undefined;
  const tokenizer = exportTokenizer({ spec: given ?? vocab.tokenizer.name, trimmed: vocab.ids });
  const parameters = [...weights.values()].reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1), 0);
  const base = {
    format: options.format,
    out: options.out,
    precision: options.precision,
    parameters,
    tokenizer: tokenizer.name,
  };
  if (options.format === 'gguf') {
    const { metadata, warnings } = tokenizer.ggufMetadata(cfg.vocabSize);
    mkdirSync(dirname(resolve(options.out)), { recursive: true });
    const bytes = writeGgufExport(options.out, {
      cfg,
      weights,
      vocab: { ...metadata, ...vocabMapMetadata(vocab) },
      precision: options.precision,
      name: generalName(source),
    });
    return { ...base, architecture: ggufArchitecture(cfg), vocabSize: cfg.vocabSize, bytes, warnings };
  }
  if (options.precision !== 'f32') throw new Error('--format hf writes f32 weights only');
  if (vocab.ids)
    throw new CheckpointFormatError(
      `policy ${source} has a trimmed vocabulary (${vocab.size} of ${vocab.tokenizer.name}'s ids); a Hugging Face directory's rows are the tokenizer's ids, so export it with --format gguf, which records the map`,
    );
  mkdirSync(options.out, { recursive: true });
  const tensors = [...weights].map(([name, t]) => ({ name, shape: [...t.shape], data: readAll(t) }));
  writeChunksAtomic(join(options.out, 'model.safetensors'), safetensorsChunks(tensors, { format: 'pt' }));
  tokenizer.writeHfFiles(options.out);
  // Which tokenizer the weights speak, so --policy/--init on this directory find the same one; a
  // tokenizer named by its directory is named by the copy here (the same files, the same sha256).
  const builtin = (BUILTIN_TOKENIZERS as readonly string[]).includes(tokenizer.name);
  const ref = builtin
    ? { ...vocab.tokenizer, name: tokenizer.name }
    : { ...vocab.tokenizer, name: resolve(options.out) };
  writeVocabMap(options.out, VocabMap.identity(vocab.size, ref));
  // config.json last: its presence marks a complete directory.
  writeFileAtomic(join(options.out, 'config.json'), JSON.stringify(toHfConfig(cfg), null, 2) + '\n');
  return {
    ...base,
    architecture: hfArchitectureName(cfg),
    vocabSize: cfg.vocabSize,
    bytes: statSync(join(options.out, 'model.safetensors')).size,
    warnings: [],
  };
}
