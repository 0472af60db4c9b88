import type { z } from 'zod';

/**
 * A problem the user caused in a config file or flags. The CLI prints `message` (one line per
 * problem) and exits 2, never a stack trace (house style habit 10).
 */
export class ConfigError extends Error {
  constructor(
    readonly problems: readonly string[],
    readonly source = 'config',
  ) {
    super(`invalid ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** The parts of a zod schema's runtime shape that keysAt walks (zod 4: `.shape` on objects, `.def` on wrappers). */
interface SchemaNode {
  shape?: Record<string, SchemaNode | undefined>;
  def?: { innerType?: SchemaNode; in?: SchemaNode };
}

/** Valid keys of the object schema reached by `path`, or [] when it is not an object. */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const unwrap = (x: SchemaNode | undefined): SchemaNode | undefined => {
    // ZodDefault / ZodOptional / ZodPipe wrap the object we want.
    while (x && !x.shape && x.def && (x.def.innerType || x.def.in)) x = x.def.innerType ?? x.def.in;
    return x;
  };
  let s = unwrap(schema as unknown as SchemaNode);
  for (const key of path) {
    if (!s?.shape) return [];
    s = unwrap(s.shape[String(key)]);
  }
  return s?.shape ? Object.keys(s.shape) : [];
}

/**
 * A problem line (`path: what is wrong`) with the flag that sets it appended, `… (--flag)`: the
 * flag of the most specific path that is the line's path or encloses it, so that a refused value
 * names what the user typed; the line unchanged when no flag sets it.
 */
export function withFlagHint(line: string, flags: readonly { path: readonly string[]; flag: string }[]): string {
  const path = line.slice(0, line.indexOf(':'));
  let best: { path: readonly string[]; flag: string } | undefined;
  for (const f of flags) {
    const p = f.path.join('.');
    if ((path === p || path.startsWith(`${p}.`)) && (!best || f.path.length > best.path.length)) best = f;
  }
  return best ? `${line} (--${best.flag})` : line;
}

/**
 * Formats zod issues as one clear line per problem: `path: what is wrong`. Unknown keys name the
 * key and list the valid ones so a typo is a one-look fix.
 */
export function formatConfigIssues(issues: readonly z.core.$ZodIssue[], schema?: z.ZodType): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    const where = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
    if (issue.code === 'unrecognized_keys') {
      const valid = schema ? keysAt(schema, issue.path) : [];
      for (const key of issue.keys) {
        const full = [...issue.path, key].join('.');
        lines.push(`${full}: unknown key${valid.length ? ` (valid keys at ${where}: ${valid.join(', ')})` : ''}`);
      }
    } else if (issue.code === 'invalid_value' && 'values' in issue) {
      lines.push(`${where}: must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`);
    } else {
      lines.push(`${where}: ${issue.message}`);
    }
  }
  return lines;
}
