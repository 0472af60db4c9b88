import { describe, expect, it } from 'vitest';
import { TOOLS_ANSWER_SHARE, withAgentFormat } from './preset-agent-format.ts';
import { getPreset } from './presets.ts';
import { withTokenizer } from './preset-tokenizer.ts';

describe('a preset in the tools format', () => {
  it('sets the format on SFT and training, and widens the base to the widest window of the format', () => {
    const qwen = withTokenizer(getPreset('quick'), 'qwen3');
    const tools = withAgentFormat(qwen, 'tools', true);
    expect(tools.agentFormat).toBe('tools');
    expect(tools.thinking).toBe(true);
    expect(tools.train.rollout).toMatchObject({ agentFormat: 'tools', thinking: true });
    expect(tools.sft.rollout).toMatchObject({ agentFormat: 'tools', thinking: true });
    expect(tools.sft.model!.maxSeqLen!).toBeGreaterThan(qwen.sft.model!.maxSeqLen!);
    // The dense warm-up's episode forms end with an answer a share of the time in this format only.
    expect(tools.sft.dense?.answerShare).toBe(TOOLS_ANSWER_SHARE);
    expect(qwen.sft.dense?.answerShare).toBeUndefined();
    expect(withAgentFormat(qwen, 'text', false)).toBe(qwen);
  });

  it('refuses the word vocabulary, naming the fix', () => {
    expect(() => withAgentFormat(getPreset('quick'), 'tools', false)).toThrow(/add --tokenizer qwen3/);
  });
});
