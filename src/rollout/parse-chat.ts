import type { ChatFormat, Role } from './chat-format.ts';
import type { ChatMessage, Tokenizer } from '../contracts/index.ts';

const ROLES: readonly Role[] = ['system', 'user', 'assistant', 'observation'];

/**
 * Parses a window (token ids, as a policy sees them) into chat turns, so text-level policies can
 * read it, with the chat format's own turn pieces (chat-format.ts). A turn's opening ids open a turn (closing one still open: a generated turn without its
 * end) and its closing ids close it. Tokens outside any turn are ignored. A trailing open turn is
 * kept when it has content (a partial turn) and dropped when empty, so a prompt ending in the
 * generation prompt parses to the turns before it. Openings are matched longest first (Qwen3's
 * observation opening starts with its user opening).
 */
export function parseChat(
  tokens: ArrayLike<number>,
  chat: { readonly tokenizer: Tokenizer; readonly format: ChatFormat },
): ChatMessage[] {
  const { turns } = chat.format;
  const opens = ROLES.map((role) => ({ role, ids: turns[role].open }))
    .filter((o) => o.ids.length > 0)
    .sort((a, b) => b.ids.length - a.ids.length);
  const at = (i: number, ids: readonly number[]): boolean => {
    if (ids.length === 0 || i + ids.length > tokens.length) return false;
    for (let k = 0; k < ids.length; k++) if (tokens[i + k] !== ids[k]) return false;
    return true;
  };

  // An observation written as a JSON string's inside (Llama 3.1) is read back as its text.
  const text = (role: Role, s: string): string => {
    if (role !== 'observation' || chat.format.observationContent !== 'json-string') return s;
    try {
      return JSON.parse(`"${s}"`) as string;
    } catch {
      return s; // cut inside an escape
    }
  };
  const messages: ChatMessage[] = [];
  let role: Role | null = null;
  let start = 0;
  const close = (end: number, keepEmpty: boolean): void => {
    if (role === null) return;
    const body = Array.prototype.slice.call(tokens, start, end) as number[];
    if (keepEmpty || body.length > 0) messages.push({ role, content: text(role, chat.tokenizer.decode(body)) });
    role = null;
  };
  let i = 0;
  while (i < tokens.length) {
    const open = opens.find((o) => at(i, o.ids));
    if (open) {
      close(i, true);
      role = open.role;
      i += open.ids.length;
      start = i;
    } else if (role !== null && at(i, turns[role].close)) {
      const n = turns[role].close.length;
      close(i, true);
      i += n;
    } else i++;
  }
  close(tokens.length, false);
  return messages;
}
