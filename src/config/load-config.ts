import { readFileSync } from 'node:fs';
import { ConfigError, formatConfigIssues } from './config-error.ts';
import { deepMerge } from './config-flags.ts';
import { TrainConfigSchema, type TrainConfig } from './train-config.ts';

/** Reads a JSON file; a missing file or bad JSON is a ConfigError with the path in it. */
export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new ConfigError([`cannot read config file ${path}`], path);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ConfigError([`not valid JSON: ${(e as Error).message}`], path);
  }
}

/** Validates a raw object as a TrainConfig; problems become one line each. */
export function parseTrainConfig(raw: unknown, source = 'config'): TrainConfig {
  const r = TrainConfigSchema.safeParse(raw);
  if (!r.success) throw new ConfigError(formatConfigIssues(r.error.issues, TrainConfigSchema), source);
  return r.data;
}

/**
 * Resolves the training config: preset/base values, then the file, then flag overrides (later
 * layers win key by key), validated once at the end so every error names its final path.
 */
export function loadTrainConfig(options: {
  base?: unknown;
  file?: string;
  overrides?: Record<string, unknown>;
}): TrainConfig {
  let raw: unknown = options.base ?? {};
  if (options.file) raw = deepMerge(raw, readJsonFile(options.file));
  if (options.overrides) raw = deepMerge(raw, options.overrides);
  const source = options.file ? `config (${options.file} + flags)` : 'config (flags)';
  return parseTrainConfig(raw, source);
}
