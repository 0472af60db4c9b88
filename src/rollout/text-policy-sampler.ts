import type { TextPolicy } from '../contracts/index.ts';
import { requestStreams, type Rng } from '../util/random.ts';
import type { ChatTemplateSource } from './chat-format.ts';
import { chatFormatOf } from './chat-layout.ts';
import { parseChat } from './parse-chat.ts';
import type { SampleRequest, SampleResult, TokenSampler } from '../contracts/index.ts';
import type { AgentProtocol } from './agent-format/agent-protocol.ts';
import { asTextMessages, toolsTurn, type Reasoner } from './agent-format/tools-text-policy.ts';

/**
 * Turns a text-level policy (scripted expert, summary writer) into a TokenSampler: each prompt
 * is parsed with parseChat, the policy writes its turn, and the text is encoded (as the runtime
 * encodes any turn's text, chat-layout.ts) followed by the request's stop id, cut at its first
 * stop id or at maxTokens. Logprobs are null (unknown). A request that names its episode draws
 * from a stream of its own (seeded by the sampler's seed, the episode id and the prompt), as
 * ModelSampler does, so a seed reproduces its episodes however their requests were batched;
 * requests without one share `rng` in request order. With `agent` (the layout's tools format) the
 * policy reads earlier calls as their text actions and its turn is written as a call or a summary
 * in the template's syntax (agent-format/tools-text-policy.ts).
 */
export function textPolicySampler(options: {
  tokenizer: ChatTemplateSource;
  policy: TextPolicy;
  rng: Rng;
  agent?: AgentProtocol | null;
  reasoner?: Reasoner;
}): TokenSampler {
  const { policy, rng, agent } = options;
  // The tools format's turns are as its protocol renders them (GLM-4.5 ends a user turn with /nothink when thinking is off).
  const chat = {
    tokenizer: options.tokenizer.tokenizer,
    format: agent ? agent.format : chatFormatOf(options.tokenizer),
  };
  const rngFor = requestStreams(rng);
  const one = (req: SampleRequest): SampleResult => {
    const parsed = parseChat(req.prompt, chat);
    const messages = agent ? asTextMessages(agent, parsed) : parsed;
    let text = policy(messages, rngFor(req));
    if (agent) text = toolsTurn({ agent, stage: req.stage ?? 'act', text, messages, reasoner: options.reasoner });
    // As the runtime encodes a turn's text; a call is kept as the template writes it (GLM-4.5's starts with a newline).
    const content = chat.tokenizer.encode(agent ? text : text.trim());
    const stop = req.stopTokens[0];
    const full = stop === undefined ? content : [...content, stop];
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
