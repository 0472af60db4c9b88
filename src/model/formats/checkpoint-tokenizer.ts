/**
 * crl_tokenizer.json, a checkpoint's record of the tokenizer its model speaks (name, content hash)
 * and its vocabulary map (docs/decisions/0013); absent in older checkpoints: word, full.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { VocabMap, type TokenizerRef } from '../tokenizer/vocab-map.ts';
import { CheckpointFormatError } from './safetensors.ts';

const TOKENIZER_FILE = 'crl_tokenizer.json';

const TokenizerFileSchema = z
  .object({
    format: z.literal('compaction-rl-tokenizer'),
    version: z.literal(1),
    name: z.string().min(1),
    sha256: z.string().optional(),
    /** 'full': the tokenizer's ids are the model's (identity); else the real id of each index. */
    vocabulary: z.union([z.literal('full'), z.object({ ids: z.array(z.number().int().min(0)) }).strict()]),
  })
  .strict();

/** The tokenizer a checkpoint's model speaks (word for checkpoints that predate the record). */
export async function readCheckpointTokenizer(dir: string): Promise<TokenizerRef> {
  return (await readVocabMap(dir, null)).tokenizer;
}

/** Writes crl_tokenizer.json: the tokenizer a model speaks and its vocabulary map. */
export function writeVocabMap(dir: string, vocab: VocabMap): void {
  const tokenizerFile: z.infer<typeof TokenizerFileSchema> = {
    format: 'compaction-rl-tokenizer',
    version: 1,
    name: vocab.tokenizer.name,
    ...(vocab.tokenizer.sha256 ? { sha256: vocab.tokenizer.sha256 } : {}),
    vocabulary: vocab.ids ? { ids: [...vocab.ids] } : 'full',
  };
  writeFileAtomic(join(dir, TOKENIZER_FILE), JSON.stringify(tokenizerFile) + '\n');
}

/** crl_tokenizer.json as a VocabMap over `size` indices (null: any); absent = the word vocabulary. */
export async function readVocabMap(dir: string, size: number | null): Promise<VocabMap> {
  const path = join(dir, TOKENIZER_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    return VocabMap.identity(size ?? 0, { name: 'word' });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CheckpointFormatError(`${path} is not valid JSON`);
  }
  const r = TokenizerFileSchema.safeParse(json);
  if (!r.success)
    throw new CheckpointFormatError(
      `${path}: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  const ref: TokenizerRef = { name: r.data.name, ...(r.data.sha256 ? { sha256: r.data.sha256 } : {}) };
  const v = r.data.vocabulary;
  const map = v === 'full' ? VocabMap.identity(size ?? 0, ref) : VocabMap.trimmed(v.ids, ref);
  if (size !== null && map.size !== size)
    throw new CheckpointFormatError(`${path} maps ${map.size} indices, but the model's vocabulary has ${size}`);
  return map;
}
