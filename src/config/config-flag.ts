/** One CLI flag that overrides a config key (config-flags.ts): its row, and how its raw value is read. */
export interface ConfigFlag {
  /** commander option name without dashes, kebab-case. */
  flag: string;
  /** Where the value goes in TrainConfig. */
  path: readonly string[];
  /** list: comma-separated strings. */
  kind: 'int' | 'number' | 'string' | 'boolean' | 'json' | 'list';
  help: string;
}

/**
 * Parses one flag's raw string. Bad numbers are left as strings on purpose: the schema then
 * reports them with the config path, in the same format as file errors.
 */
export function parseFlagValue(kind: ConfigFlag['kind'], raw: string, flag: string): unknown {
  switch (kind) {
    case 'int':
    case 'number': {
      const n = Number(raw);
      return raw.trim() !== '' && Number.isFinite(n) ? n : raw;
    }
    case 'boolean':
      return raw === 'true' || raw === 'on' ? true : raw === 'false' || raw === 'off' ? false : raw;
    case 'list':
      return raw
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        throw new Error(`--${flag}: not valid JSON: ${raw}`);
      }
    default:
      return raw;
  }
}
