import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/random.ts';
import { createChatLayout, DEFAULT_CHAT_TEMPLATES, maxResumeTurnLength, maxStepLength } from './chat-layout.ts';
import { resolveRolloutConfig, type RolloutConfig } from './config.ts';
import type { EpisodeRecord, Segment } from './record.ts';
import { runEpisodes } from './runner.ts';
import { randomTokenSampler, RandomEnv, type SamplerCall } from './testing/scripted.ts';

const source = loadTokenizer('word');

const tokenizer = source.tokenizer as WordTokenizer;
const layout = createChatLayout({ tokenizer: source, templates: DEFAULT_CHAT_TEMPLATES });
const ASST = tokenizer.specialId('<asst>');
const EOT = tokenizer.specialId('<eot>');

/** Random but valid budgets: T_comp and C are built up from the method §2 lower bounds plus slack. */
const scenario = fc
  .record({
    maxActionTokens: fc.integer({ min: 1, max: 12 }),
    maxObservationTokens: fc.integer({ min: 2, max: 32 }),
    summaryMaxTokens: fc.integer({ min: 1, max: 48 }),
    thresholdSlack: fc.integer({ min: 0, max: 24 }),
    startSlack: fc.integer({ min: 0, max: 120 }),
    tailSteps: fc.integer({ min: 0, max: 3 }),
    maxWindows: fc.integer({ min: 1, max: 5 }),
    stepLimit: fc.integer({ min: 1, max: 64 }),
    includeTask: fc.boolean(),
    instructionWords: fc.integer({ min: 0, max: 20 }),
    maxObservationWords: fc.integer({ min: 0, max: 50 }),
    doneProbability: fc.double({ min: 0, max: 0.3, noNaN: true }),
    episodes: fc.integer({ min: 1, max: 5 }),
    concurrency: fc.integer({ min: 1, max: 5 }),
    seed: fc.integer({ min: 0, max: 1_000_000 }),
  })
  .map((s) => {
    const threshold =
      maxStepLength({ ...s, layout }) + layout.summaryPrompt.length + s.summaryMaxTokens + s.thresholdSlack;
    const resume = maxResumeTurnLength(layout, s.summaryMaxTokens);
    const start = layout.systemTurn.length + Math.max(resume, s.instructionWords + 2 + (s.includeTask ? resume : 0));
    return { ...s, compactThreshold: threshold, contextWindow: threshold + start + s.startSlack };
  });
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

async function runScenario(
  s: Scenario,
): Promise<{ config: RolloutConfig; records: EpisodeRecord[]; calls: SamplerCall[] }> {
  const { config } = resolveRolloutConfig({
    tokenizer: source,
    input: {
      contextWindow: s.contextWindow,
      compactThreshold: s.compactThreshold,
      tailSteps: s.tailSteps,
      maxWindows: s.maxWindows,
      summaryMaxTokens: s.summaryMaxTokens,
      maxActionTokens: s.maxActionTokens,
      maxObservationTokens: s.maxObservationTokens,
      stepLimit: s.stepLimit,
      resume: { includeTask: s.includeTask },
    },
  });
  const calls: SamplerCall[] = [];
  const actor = randomTokenSampler({ tokenizer, rng: new Rng(s.seed), log: calls });
  const episodes = Array.from({ length: s.episodes }, (_, i) => ({
    episodeId: `ep${i}`,
    env: new RandomEnv({
      instructionWords: s.instructionWords,
      maxObservationWords: s.maxObservationWords,
      doneProbability: s.doneProbability,
    }),
    seed: s.seed + i,
  }));
  const records = await runEpisodes({ episodes, config, layout, actor, concurrency: s.concurrency });
  return { config, records, calls };
}

const generatedOf = (seg: Segment): number[] => seg.tokens.filter((_, i) => seg.lossMask[i] === 1);
const isPrefix = (a: readonly number[], b: readonly number[]): boolean =>
  a.length <= b.length && a.every((t, i) => b[i] === t);

/** Checks every method §2-3 invariant of one episode against what the sampler saw. */
function checkEpisode(config: RolloutConfig, rec: EpisodeRecord, calls: readonly SamplerCall[]): void {
  const C = config.contextWindow;
  const T = config.compactThreshold;
  // No policy call sees more than C tokens, prompt plus generated; the trigger is exact.
  for (const call of calls) {
    expect(call.prompt.length + call.maxTokens).toBeLessThanOrEqual(C);
    const h = call.prompt.length - (call.stage === 'act' ? 1 : layout.summaryPrompt.length);
    if (call.stage === 'act') expect(C - h).toBeGreaterThanOrEqual(T);
    else expect(C - h).toBeLessThan(T);
  }
  // 2c + 1 segments alternating execution / summary; at most K - 1 compactions.
  expect(rec.compactions).toBeLessThanOrEqual(config.maxWindows - 1);
  expect(rec.segments).toHaveLength(2 * rec.compactions + 1);
  rec.segments.forEach((seg, i) => {
    expect(seg.index).toBe(i);
    expect(seg.kind).toBe(i % 2 === 0 ? 'execution' : 'summary');
    expect(seg.tokens.length).toBeLessThanOrEqual(C);
  });
  // Every generated token is marked exactly once, in order, with its sampling logprob.
  expect(rec.segments.flatMap(generatedOf)).toEqual(calls.flatMap((c) => c.tokens));
  expect(rec.segments.flatMap((s) => s.logprobs.filter((_, i) => s.lossMask[i] === 1))).toEqual(
    calls.flatMap((c) => c.logprobs),
  );
  expect(rec.generatedTokens).toBe(calls.reduce((n, c) => n + c.tokens.length, 0));
  // Summary segments are exactly the prompt the summarizer saw plus its output; the mask covers S only.
  const sums = calls.filter((c) => c.stage === 'summarize');
  expect(sums).toHaveLength(rec.compactions);
  rec.segments
    .filter((s) => s.kind === 'summary')
    .forEach((seg, j) => {
      const call = sums[j]!;
      expect(seg.tokens).toEqual([...call.prompt, ...call.tokens]);
      expect(seg.lossMask).toEqual(seg.tokens.map((_, i) => (i >= call.prompt.length ? 1 : 0)));
    });
  // Token-in/token-out: each action's prompt is a prefix of its execution segment.
  let segIdx = 0;
  for (const call of calls) {
    if (call.stage === 'summarize') segIdx += 2;
    else expect(isPrefix(call.prompt, rec.segments[segIdx]!.tokens)).toBe(true);
  }
  // Tail steps are whole steps of the previous window, shrunk only as far as needed.
  const compactions = rec.events.filter((e) => e.kind === 'compaction');
  compactions.forEach((ev, j) => {
    const prev = rec.segments[2 * j]!;
    const next = rec.segments[2 * j + 2]!;
    const starts = prev.tokens.flatMap((t, i) => (t === ASST && prev.lossMask[i] === 0 ? [i] : []));
    const kept = ev.tailStepsKept;
    expect(kept).toBeLessThanOrEqual(Math.min(config.tailSteps, starts.length));
    const tail = kept > 0 ? prev.tokens.slice(starts[starts.length - kept]) : [];
    const startLen = ev.windowTokensAfter;
    expect(next.tokens.slice(startLen - tail.length, startLen)).toEqual(tail);
    // The rebuilt window is s ⊕ [u] ⊕ u_resume(S) ⊕ tail, all context (mask 0).
    const summary = sums[j]!.tokens;
    const body = summary[summary.length - 1] === EOT ? summary.slice(0, -1) : summary;
    const task = config.resume.includeTask
      ? rec.segments[0]!.tokens.slice(
          layout.systemTurn.length,
          rec.segments[0]!.tokens.indexOf(EOT, layout.systemTurn.length) + 1,
        )
      : [];
    expect(next.tokens.slice(0, startLen - tail.length)).toEqual([
      ...layout.systemTurn,
      ...task,
      ...layout.resumeOpen,
      ...body,
      EOT,
    ]);
    expect(next.lossMask.slice(0, startLen).every((m) => m === 0)).toBe(true);
    expect(C - startLen).toBeGreaterThanOrEqual(T);
    if (kept < Math.min(config.tailSteps, starts.length)) {
      const oneMore = prev.tokens.length - starts[starts.length - kept - 1]!;
      expect(C - (startLen - tail.length + oneMore)).toBeLessThan(T);
    }
  });
  // Outcomes: truncated and step-limited episodes earn 0.
  if (rec.outcome === 'truncated' || rec.outcome === 'step-limit') expect(rec.reward).toBe(0);
  if (rec.outcome === 'truncated') {
    expect(rec.compactions).toBe(config.maxWindows - 1);
    expect(C - rec.segments[rec.segments.length - 1]!.tokens.length).toBeLessThan(T);
  }
  expect(rec.steps).toBeLessThanOrEqual(config.stepLimit);
  if (rec.outcome === 'step-limit') expect(rec.steps).toBe(config.stepLimit);
}

describe('runEpisodes (method §2-3 invariants)', () => {
  it('holds every invariant over random budgets, observation lengths and a scripted policy', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const { config, records, calls } = await runScenario(s);
        expect(records).toHaveLength(s.episodes);
        for (const rec of records)
          checkEpisode(
            config,
            rec,
            calls.filter((c) => c.episodeId === rec.episodeId),
          );
      }),
      { numRuns: 150 },
    );
  });

  it('exercises compaction, tail shrinking, truncation and observation cuts across the scenarios', async () => {
    // Guards the property above against passing vacuously.
    const seen = { compaction: 0, shrunk: 0, truncated: 0, cut: 0 };
    const samples = fc.sample(scenario, { numRuns: 60, seed: 42 });
    for (const s of samples) {
      const { records } = await runScenario({ ...s, doneProbability: s.doneProbability / 4 });
      for (const r of records) {
        for (const e of r.events) {
          if (e.kind === 'compaction') {
            seen.compaction++;
            if (e.tailStepsDropped > 0) seen.shrunk++;
          } else seen.cut++;
        }
        if (r.outcome === 'truncated') seen.truncated++;
      }
    }
    expect(seen.compaction).toBeGreaterThan(10);
    expect(seen.shrunk).toBeGreaterThan(0);
    expect(seen.truncated).toBeGreaterThan(0);
    expect(seen.cut).toBeGreaterThan(0);
  });

  it('replays: the same seeds and sampler give identical records', async () => {
    const s = fc.sample(scenario, { numRuns: 1, seed: 7 })[0]!;
    const a = await runScenario({ ...s, episodes: 5, concurrency: 3 });
    const b = await runScenario({ ...s, episodes: 5, concurrency: 3 });
    expect(JSON.stringify(b.records)).toBe(JSON.stringify(a.records));
    expect(a.records.some((r) => r.segments.length > 0)).toBe(true);
  });
});
