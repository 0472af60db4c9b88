import { CliError } from './errors.ts';

/** A JSON-valued flag (`--knobs`, `--mix`, `--dense`): bad JSON is a user error naming the flag. */
export function parseJsonFlag(text: string, flag: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`${flag}: not valid JSON: ${text}`);
  }
}

/** `--knobs`: a JSON object, or {} when the flag is absent. */
export function parseKnobsFlag(text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {};
  const v = parseJsonFlag(text, '--knobs');
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new CliError(`--knobs: expected a JSON object, got ${text}`);
  return v as Record<string, unknown>;
}
