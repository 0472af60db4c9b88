import { describe, expect, it } from 'vitest';
import type { SampleRequest, TokenSampler } from '../../contracts/index.ts';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../config.ts';
import { runEpisodes } from '../runner.ts';

/**
 * A turn that is not one good call is the agent's failure and it is told (docs/agent-format.md):
 * the environment is not stepped, the observation says what was wrong, the episode goes on, and
 * the turn's record names the cause.
 */
describe('bad tool calls in an episode', () => {
  it('each is answered with what was wrong; the next good call acts', async () => {
    const qwen3 = loadTokenizer('qwen3');
    const family = getFamily('kv-ledger');
    const { config, layout } = resolveRolloutConfig({
      tokenizer: qwen3,
      input: { agentFormat: 'tools', thinking: true, stepLimit: 4 },
      tools: family.tools!,
    });
    const agent = layout.agent!;
    const turns = [
      '<think>\nI read.\n</think>\n\nread',
      '<think>\nI read.\n</think>\n\n<tool_call>\n{"name": "peek", "arguments": {}}\n</tool_call>',
      agent.writeAction('I read.', { name: 'read', arguments: {} }),
      agent.writeAction('I answer.', { name: 'answer', arguments: { values: ['x'] } }),
    ];
    let i = 0;
    const sampler: TokenSampler = {
      sample: async (requests: SampleRequest[]) =>
        requests.map(() => {
          const tokens = [...qwen3.tokenizer.encode(turns[i++ % turns.length]!), layout.actStop];
          return { tokens, logprobs: tokens.map(() => -0.5), finishReason: 'stop' as const };
        }),
    };
    const [rec] = await runEpisodes({
      episodes: [{ episodeId: 'bad', env: family.create({}), seed: 1 }],
      config,
      layout,
      actor: sampler,
    });
    const calls = rec!.turns!.map((t) => t.call);
    expect(calls.map((c) => c?.cause ?? 'ok')).toEqual(['no_call', 'unknown_tool', 'ok', 'ok']);
    const text = qwen3.tokenizer.decode(rec!.segments.at(-1)!.tokens);
    expect(text).toContain('tool call error (no_call): no tool call; call exactly one of the declared tools');
    expect(text).toContain('tool call error (unknown_tool): no tool named "peek"; the tools are read, answer');
    expect(text).toMatch(/chunk 1 :/); // the good read acted
    expect(rec!.steps).toBe(4);
    expect(rec!.outcome).toBe('step-limit');
  });
});
