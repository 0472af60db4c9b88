import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { llama31ToolsDir } from '../model/tokenizer/testing/tool-tokenizer-dirs.ts';
import {
  chatFormatOf,
  createChatLayout,
  CUT_MARKER,
  DEFAULT_CHAT_TEMPLATES,
  encodeObservationTurn,
} from './chat-layout.ts';
import { parseChat } from './parse-chat.ts';

/**
 * Llama 3.1's template renders a tool result as a JSON string (`tojson`, between quotes): the
 * chat format finds that from the template, an observation is written escaped, a long one is cut
 * in its text before escaping, and a scripted policy reads the text back.
 */
describe('observations written as a JSON string', () => {
  const llama = loadTokenizer(llama31ToolsDir());
  const layout = createChatLayout({ tokenizer: llama, templates: DEFAULT_CHAT_TEMPLATES });
  const observation = 'total 2\n-rw-r--r-- "a b"\tnotes\\x.txt\nend';

  it('is found from the template (Qwen3 writes its tool results as they are)', () => {
    expect(chatFormatOf(llama).observationContent).toBe('json-string');
    expect(chatFormatOf(loadTokenizer('qwen3')).observationContent).toBe('text');
  });

  it('is written escaped and read back as its text', () => {
    const { tokens, cut } = encodeObservationTurn({ layout, observation, maxTokens: 200 });
    expect(cut).toBe(false);
    const ids = [...layout.format.turns.observation.open, ...tokens];
    expect(llama.tokenizer.decode(ids)).toBe(
      `<|start_header_id|>ipython<|end_header_id|>\n\n${JSON.stringify(observation)}<|eot_id|>`,
    );
    expect(parseChat(ids, layout)).toEqual([{ role: 'observation', content: observation }]);
  });

  it('a long one is cut in its text, so what is kept is still a JSON string', () => {
    for (const maxTokens of [4, 9, 15]) {
      const { tokens, cut } = encodeObservationTurn({ layout, observation: observation.repeat(4), maxTokens });
      expect(cut).toBe(true);
      const content = tokens.slice(0, tokens.length - layout.format.turns.observation.close.length);
      expect(content.length).toBeLessThanOrEqual(maxTokens);
      const text = JSON.parse(`"${llama.tokenizer.decode(content)}"`) as string;
      expect(text.endsWith(CUT_MARKER)).toBe(true);
      expect(observation.repeat(4).startsWith(text.slice(0, -CUT_MARKER.length))).toBe(true);
    }
  });
});
