import type { TextPolicy } from '../env/family.ts';
import type { Rng } from '../util/random.ts';
import { parseChat } from './parse-chat.ts';
import type { SampleRequest, SampleResult, TokenSampler, Tokenizer } from './types.ts';

/**
 * Turns a text-level policy (scripted expert, summary writer) into a TokenSampler: each prompt
 * is parsed with parseChat, the policy writes its turn, and the text is encoded followed by
 * `<eot>`, cut at the request's first stop token or at maxTokens. Logprobs are null (unknown).
 * Requests are answered in order with one shared rng, so a run is reproducible from its seed.
 */
export function textPolicySampler(options: { tokenizer: Tokenizer; policy: TextPolicy; rng: Rng }): TokenSampler {
  const { tokenizer, policy, rng } = options;
  const eot = tokenizer.specialId('<eot>');
  const one = (req: SampleRequest): SampleResult => {
    const text = policy(parseChat(req.prompt, tokenizer), rng);
    const full = [...tokenizer.encode(text), eot];
    let end = full.length;
    for (let i = 0; i < full.length; i++) {
      if (req.stopTokens.includes(full[i]!)) {
        end = i + 1;
        break;
      }
    }
    const finishReason: SampleResult['finishReason'] = end <= req.maxTokens ? 'stop' : 'length';
    const tokens = full.slice(0, Math.min(end, req.maxTokens));
    return { tokens, logprobs: tokens.map(() => null), finishReason };
  };
  return { sample: async (requests) => requests.map(one) };
}
