import type { ChatFormat } from '../rollout/chat-format.ts';
import type { Tokenizer } from '../contracts/index.ts';
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

const TURN_ROLES = ['system', 'user', 'assistant', 'observation'] as const;

/**
 * The chat role of every token, from the chat format's own turn pieces (rollout/chat-format.ts):
 * a turn's opening ids start it, its closing ids end it; the pieces themselves and the format's
 * prefix are 'marker'. Openings are matched longest first, as parseChat does.
 */
export function tokenRoles(tokens: readonly number[], format: ChatFormat): number[] {
  const marker = ROLES.indexOf('marker');
  const opens = TURN_ROLES.map((role) => ({ role, ids: format.turns[role].open }))
    .filter((o) => o.ids.length > 0)
    .sort((a, b) => b.ids.length - a.ids.length);
  const at = (i: number, ids: readonly number[]): boolean =>
    ids.length > 0 && i + ids.length <= tokens.length && ids.every((id, k) => tokens[i + k] === id);
  const out = new Array<number>(tokens.length).fill(marker);
  let role: (typeof TURN_ROLES)[number] | null = null;
  let i = at(0, format.prefix) ? format.prefix.length : 0;
  while (i < tokens.length) {
    const open = opens.find((o) => at(i, o.ids));
    if (open) {
      role = open.role;
      i += open.ids.length;
    } else if (role !== null && at(i, format.turns[role].close)) {
      i += format.turns[role].close.length;
      role = null;
    } else {
      out[i] = role === null ? marker : ROLES.indexOf(role);
      i++;
    }
  }
  return out;
}
