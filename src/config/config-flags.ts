/**
 * CLI flags that override config keys (flags win over the file). A table, not a chain of ifs:
 * the train command declares one option per row and this module maps parsed values to a nested
 * partial config that the schema then validates.
 */
import { parseFlagValue, type ConfigFlag } from './config-flag.ts';
import { EXECUTION_FLAGS } from './execution-flags.ts';
import { METHOD_FLAGS } from './method-flags.ts';
import { MODEL_FLAGS } from './model-flags.ts';

/** The table, rows in the order the train command declares them (method-, model-, execution-flags.ts). */
export const CONFIG_FLAGS: readonly ConfigFlag[] = [...METHOD_FLAGS, ...MODEL_FLAGS, ...EXECUTION_FLAGS];

/** commander turns `--policy-lr` into `policyLr`. */
export function camelFlag(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** Builds the nested override object from commander's parsed options (strings). */
export function flagsToConfig(options: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of CONFIG_FLAGS) {
    const raw = options[camelFlag(f.flag)];
    // Every config flag takes a value, which commander passes as a string.
    if (typeof raw !== 'string') continue;
    let node = out;
    f.path.slice(0, -1).forEach((k) => {
      node[k] ??= {};
      node = node[k] as Record<string, unknown>;
    });
    node[f.path[f.path.length - 1]!] = parseFlagValue(f.kind, raw, f.flag);
  }
  return out;
}

/** Deep merge of plain objects; `b` wins. Arrays and scalars are replaced, not merged. */
export function deepMerge(a: unknown, b: unknown): unknown {
  const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
  if (!isObj(a) || !isObj(b)) return b === undefined ? a : b;
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = deepMerge(a[k], v);
  return out;
}
