import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { overFamilySizes, resolveRolloutConfig } from '../../rollout/config.ts';
import type { Preset } from './preset-types.ts';

/**
 * A preset run in the tools format (`crl reproduce --agent-format tools [--thinking on]`,
 * docs/agent-format.md): SFT, every training run and every evaluation act through tool calls. The
 * format needs a subword tokenizer (apply withTokenizer first). Its sizes grow by the format's cost
 * (rollout/agent-format/tools-sizing.ts), so the base's positions are widened to the largest window
 * any system asks for (the 2x-context system's doubled C, grown the same way).
 */
/** The share of the dense warm-up's episode forms that end with an answer in the tools format. */
export const TOOLS_ANSWER_SHARE = 0.3;

export function withAgentFormat(preset: Preset, format: 'text' | 'tools', thinking: boolean): Preset {
  if (format === 'text' && !thinking) return preset;
  const tokenizer = loadTokenizer(preset.tokenizer ?? 'word');
  if (tokenizer.tokenizer.wordLevel)
    throw new Error('--agent-format tools needs a subword tokenizer: add --tokenizer qwen3 (or a model directory)');
  const agent = { agentFormat: format, thinking };
  const train = { ...preset.train, rollout: { ...preset.train.rollout, ...agent } };
  // Answers are lookups across calls and their reasoning in this format: a share of the dense
  // warm-up's episode forms end with one (dense-warmup.ts answerShare).
  const dense = preset.sft.dense ? { ...preset.sft.dense, answerShare: TOOLS_ANSWER_SHARE } : undefined;
  const sft = { ...preset.sft, rollout: { ...preset.sft.rollout, ...agent }, ...(dense ? { dense } : {}) };
  const given = preset.sft.model?.maxSeqLen;
  if (given !== undefined) {
    let widest = given;
    for (const env of preset.envs) {
      const family = getFamily(env);
      // The given positions are the widest text-format window; the same window in this format.
      const input = { ...train.rollout, contextWindow: given };
      const { config } = resolveRolloutConfig({
        input: overFamilySizes(family.rollout, input),
        tokenizer,
        tools: family.tools ?? null,
      });
      widest = Math.max(widest, config.contextWindow);
    }
    sft.model = { ...preset.sft.model, maxSeqLen: widest };
  }
  return { ...preset, agentFormat: format, thinking, sft, train };
}
