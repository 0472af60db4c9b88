import type { ChatMessage, Tokenizer } from './types.ts';

const ROLE_OF: Readonly<Record<string, ChatMessage['role']>> = {
  '<sys>': 'system',
  '<user>': 'user',
  '<asst>': 'assistant',
  '<obs>': 'observation',
};

/**
 * Parses a window (token ids, as a policy sees them) into chat turns, so text-level policies can
 * read it. `<bos>` is skipped; a turn marker opens a turn and `<eot>` closes it. Tokens outside any
 * turn are ignored. A trailing open turn is kept when it has content (a partial turn) and dropped
 * when empty, so a prompt ending in `<asst>` parses to the turns before it.
 */
export function parseChat(tokens: ArrayLike<number>, tokenizer: Tokenizer): ChatMessage[] {
  const markers = new Map<number, ChatMessage['role']>();
  for (const [name, role] of Object.entries(ROLE_OF)) markers.set(tokenizer.specialId(name), role);
  const eot = tokenizer.specialId('<eot>');
  const bos = tokenizer.specialId('<bos>');

  const messages: ChatMessage[] = [];
  let role: ChatMessage['role'] | null = null;
  let start = 0;
  const close = (end: number, keepEmpty: boolean): void => {
    if (role === null) return;
    const body = Array.prototype.slice.call(tokens, start, end) as number[];
    if (keepEmpty || body.length > 0) messages.push({ role, content: tokenizer.decode(body) });
    role = null;
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const opens = markers.get(t);
    if (opens !== undefined) {
      // A marker inside an open turn closes it first (a generated turn without <eot>).
      close(i, true);
      role = opens;
      start = i + 1;
    } else if (t === eot) {
      close(i, true);
    } else if (t === bos) {
      continue;
    }
  }
  close(tokens.length, false);
  return messages;
}
