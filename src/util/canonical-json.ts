/**
 * One string per JSON value, whatever order its object keys were built in: keys sorted (by UTF-16
 * code units, Array.prototype.sort's order), no whitespace. A signature made over it on one
 * machine checks on another that read the value back from JSON (the queue's job signatures,
 * src/queue/job-signature.ts), so the value first goes through JSON once: what has no JSON form
 * (undefined, functions) is dropped from objects and is null in arrays, exactly as the other
 * side will see it.
 */
export function canonicalJson(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError('canonicalJson: the value has no JSON form');
  return write(JSON.parse(text) as unknown);
}

function write(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(write).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${write(o[k])}`).join(',')}}`;
}
