/**
 * The differences between a run's stored config and the one new flags resolve to, one line per
 * differing leaf (`path: stored X, now Y`), so a refused resume shows exactly what changed.
 */
export function configDifferences(stored: unknown, given: unknown, path: readonly string[] = []): string[] {
  const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
  if (isObj(stored) && isObj(given)) {
    const keys = [...new Set([...Object.keys(stored), ...Object.keys(given)])].sort();
    return keys.flatMap((k) => configDifferences(stored[k], given[k], [...path, k]));
  }
  if (JSON.stringify(stored) === JSON.stringify(given)) return [];
  const show = (x: unknown) => (x === undefined ? '(unset)' : JSON.stringify(x));
  return [`${path.join('.') || '(config)'}: stored ${show(stored)}, now ${show(given)}`];
}
