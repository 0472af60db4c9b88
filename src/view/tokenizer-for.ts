import { loadTokenizer, type LoadedTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { chatFormatOf } from '../rollout/chat-layout.ts';
import type { ChatFormat } from '../rollout/chat-format.ts';

/**
 * The tokenizer that wrote a record, by the name the record carries ('word', 'qwen3' or a
 * tokenizer directory; absent: 'word', the only one records were written with before records
 * named theirs), with the chat format derived from its template. The viewer decodes with the
 * run's own tokenizer, never with a fixed word list.
 */
export function tokenizerFor(name: string | undefined): { loaded: LoadedTokenizer; format: ChatFormat } {
  const loaded = loadTokenizer(name ?? 'word');
  return { loaded, format: chatFormatOf(loaded) };
}
