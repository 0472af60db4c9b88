/**
 * What the tools format costs against the text format (docs/agent-format.md), with the family's
 * scripted expert through the real runtime on the same seeds: generated tokens per execution turn
 * (the thinking block and the call separately), summary tokens, tokens per episode over all its
 * segments (what the trainer scores), segments and compactions per episode, success, and the
 * runtime's wall time (expert sampling is nearly free, so this is the runtime's own cost, not a
 * model's). Run: `npm run bench:agent-format -- [--env kv-ledger] [--episodes 64] [--windows 4]`.
 * Prints one JSON line per format, then a last line with all of them.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { getFamily } from '../src/env/registry.ts';
import { loadTokenizer } from '../src/model/tokenizer/load-tokenizer.ts';
import { turnMetrics } from '../src/rollout/agent-format/turn-metrics.ts';
import { overFamilySizes, resolveRolloutConfig } from '../src/rollout/config.ts';
import { runEpisodes } from '../src/rollout/runner.ts';
import { textPolicySampler } from '../src/rollout/text-policy-sampler.ts';
import { Rng } from '../src/util/random.ts';
import { parseBenchArgs } from './bench-args.ts';

const args = parseBenchArgs(
  'bench:agent-format',
  z.object({
    env: z.string().default('kv-ledger'),
    episodes: z.coerce.number().int().min(1).default(64),
    windows: z.coerce.number().int().min(1).default(4),
    tokenizer: z.string().default('qwen3'),
  }),
);
const family = getFamily(args.env);
const tokenizer = loadTokenizer(args.tokenizer);
const formats = [
  { name: 'text', input: {} },
  { name: 'tools, thinking off', input: { agentFormat: 'tools', thinking: false } },
  { name: 'tools, thinking on', input: { agentFormat: 'tools', thinking: true } },
] as const;
const results = [];
for (const f of formats) {
  const { config, layout } = resolveRolloutConfig({
    tokenizer,
    input: overFamilySizes(family.rollout, { maxWindows: args.windows, ...f.input }),
    tools: family.tools ?? null,
  });
  const sampler = (seed: number) =>
    textPolicySampler({
      tokenizer,
      policy: family.expert,
      rng: new Rng(seed),
      agent: layout.agent,
      reasoner: family.reasoner,
    });
  const t0 = performance.now();
  const records = await runEpisodes({
    episodes: Array.from({ length: args.episodes }, (_, i) => ({
      episodeId: `cost-${i}`,
      env: family.create({}),
      seed: family.evalSeeds.start + i,
    })),
    config,
    layout,
    actor: sampler(1),
    concurrency: family.maxConcurrentEpisodes ?? args.episodes,
  });
  const seconds = (performance.now() - t0) / 1000;
  let execTokens = 0;
  let summaryTokens = 0;
  let summaries = 0;
  let steps = 0;
  let segmentTokens = 0;
  let segments = 0;
  for (const r of records) {
    steps += r.steps;
    for (const s of r.segments) {
      const g = s.lossMask.reduce<number>((a, m) => a + m, 0);
      segmentTokens += s.tokens.length;
      segments++;
      if (s.kind === 'summary') {
        summaryTokens += g;
        summaries++;
      } else execTokens += g;
    }
  }
  const n = records.length;
  const tm = turnMetrics(records);
  const row = {
    format: f.name,
    contextWindow: config.contextWindow,
    compactThreshold: config.compactThreshold,
    successRate: records.filter((r) => r.outcome === 'success').length / n,
    compactionsPerEpisode: records.reduce((a, r) => a + r.compactions, 0) / n,
    stepsPerEpisode: steps / n,
    tokensPerExecTurn: execTokens / steps,
    reasoningTokensPerTurn: tm['rollout/reasoning_tokens_per_turn'] ?? 0,
    callTokensPerTurn: tm['rollout/call_tokens_per_turn'] ?? null,
    summaryTokens: summaries ? summaryTokens / summaries : null,
    segmentsPerEpisode: segments / n,
    scoredTokensPerEpisode: segmentTokens / n,
    wallSeconds: Number(seconds.toFixed(2)),
  };
  console.log(JSON.stringify(row));
  results.push(row);
}
console.log(
  JSON.stringify({ env: args.env, episodes: args.episodes, windows: args.windows, tokenizer: args.tokenizer, results }),
);
