import { parseArgs } from 'node:util';
import type { z } from 'zod';

/**
 * A bench script's flags: every key of `schema` is a `--key VALUE` flag (string values, coerced by
 * the schema). A bad flag or value prints one line naming it, prefixed by the script's name, and
 * exits 2.
 */
export function parseBenchArgs<S extends z.ZodObject>(name: string, schema: S): z.infer<S> {
  const flags = Object.keys(schema.shape);
  let values: Record<string, unknown>;
  try {
    values = parseArgs({
      options: Object.fromEntries(flags.map((k) => [k, { type: 'string' as const }])),
      strict: true,
    }).values;
  } catch (e) {
    console.error(`${name}: ${(e as Error).message}; valid flags: ${flags.map((k) => `--${k}`).join(' ')}`);
    process.exit(2);
  }
  const parsed = schema.safeParse(values);
  if (!parsed.success) {
    console.error(`${name}: ${parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; ')}`);
    process.exit(2);
  }
  return parsed.data;
}
