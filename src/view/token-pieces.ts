import type { Tokenizer } from '../rollout/types.ts';
import { ROLES } from './api-schema.ts';

/**
 * Each token's text such that the pieces concatenate to the decoded segment: a token's piece is
 * what it adds to the decoding of the token before it (spaces between words, byte-level merges),
 * so the cost is O(T) decodes of two tokens, not O(T^2).
 */
export function tokenPieces(tokens: readonly number[], tokenizer: Tokenizer): string[] {
  const single = new Map<number, string>();
  const one = (id: number): string => {
    let s = single.get(id);
    if (s === undefined) single.set(id, (s = tokenizer.decode([id])));
    return s;
  };
  return tokens.map((id, i) => {
    if (i === 0) return one(id);
    const prev = tokens[i - 1]!;
    const both = tokenizer.decode([prev, id]);
    const head = one(prev);
    return both.startsWith(head) ? both.slice(head.length) : one(id);
  });
}

const MARKERS: readonly [string, number][] = [
  ['<sys>', 0],
  ['<user>', 1],
  ['<asst>', 2],
  ['<obs>', 3],
];

/**
 * The chat role of every token, from single-token turn markers (`<sys> … <eot>`, method §2's
 * layout); null when the tokenizer has no such markers. Marker tokens themselves get 'marker'.
 */
export function tokenRoles(tokens: readonly number[], tokenizer: Tokenizer): number[] | null {
  const open = new Map<number, number>();
  let eot: number;
  let bos: number;
  try {
    for (const [name, role] of MARKERS) open.set(tokenizer.specialId(name), role);
    eot = tokenizer.specialId('<eot>');
    bos = tokenizer.specialId('<bos>');
  } catch {
    return null;
  }
  const markerRole = ROLES.indexOf('marker');
  let role = markerRole;
  return tokens.map((t) => {
    const opens = open.get(t);
    if (opens !== undefined) {
      role = opens;
      return markerRole;
    }
    if (t === eot || t === bos) {
      role = markerRole;
      return markerRole;
    }
    return role;
  });
}
