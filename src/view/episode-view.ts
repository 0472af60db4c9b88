import { markFacts, oracleSummary } from '../env/summary-facts.ts';
import { getFamily } from '../env/registry.ts';
import type { EpisodeCredit } from '../report/sample-files.ts';
import { parseChat } from '../rollout/parse-chat.ts';
import type { CompactionEvent, EpisodeRecord, Segment } from '../rollout/record.ts';
import type { ChatFormat } from '../rollout/chat-format.ts';
import type { Tokenizer } from '../contracts/index.ts';
import { EpisodeViewSchema, type EpisodeBrief, type EpisodeView, type SummaryView } from './api-schema.ts';
import { tokenizerFor } from './tokenizer-for.ts';
import { tokenPieces, tokenRoles } from './token-pieces.ts';

/** A record as the viewer holds it: the episode, the credit training saved for it (if any). */
export interface LoadedEpisode {
  record: EpisodeRecord & { tokenizer?: string };
  credit: EpisodeCredit | null;
}

export function episodeBrief(e: LoadedEpisode, index: number): EpisodeBrief {
  const r = e.record;
  return {
    index,
    episodeId: r.episodeId,
    env: r.env,
    seed: r.seed,
    outcome: r.outcome,
    reward: r.reward,
    compactions: r.compactions,
    steps: r.steps,
    generatedTokens: r.generatedTokens,
    segments: r.segments.map((s) => ({ kind: s.kind, tokens: s.tokens.length })),
    hasCredit: e.credit !== null,
  };
}

function startsWith(a: readonly number[], prefix: readonly number[]): boolean {
  return prefix.length <= a.length && prefix.every((t, i) => a[i] === t);
}

/** The summary S of a summary segment: its generated tokens, without the id that ended the turn. */
function summaryTokens(seg: Segment, format: ChatFormat): number[] {
  const gen = seg.tokens.filter((_, t) => seg.lossMask[t] === 1);
  const stop = format.turns.assistant.close[0];
  return gen.length > 0 && gen[gen.length - 1] === stop ? gen.slice(0, -1) : gen;
}

/**
 * The facts the family's oracle would keep at this compaction, and which the summary kept: the
 * family reads the same window the policy saw when asked to summarize (method §2, q_sum last).
 */
async function summaryFacts(options: {
  env: string;
  seg: Segment;
  chat: { tokenizer: Tokenizer; format: ChatFormat };
  text: string;
}): Promise<Pick<SummaryView, 'oracle' | 'facts'>> {
  let family;
  try {
    family = getFamily(options.env);
  } catch {
    return { oracle: null, facts: null }; // a family this version does not know: no facts, still viewable
  }
  if (!family.summaryFacts) return { oracle: null, facts: null };
  const first = options.seg.lossMask.indexOf(1);
  const prompt = options.seg.tokens.slice(0, first < 0 ? options.seg.tokens.length : first);
  let messages;
  try {
    messages = parseChat(prompt, options.chat);
  } catch {
    return { oracle: null, facts: null };
  }
  const content = family.summaryFacts(messages);
  return { oracle: oracleSummary(content), facts: markFacts({ content, summary: options.text }) };
}

/** Builds the episode view the web app shows (validated: a bad view is a server bug). */
export async function buildEpisodeView(options: {
  episode: LoadedEpisode;
  source: number;
  iteration: number;
  index: number;
}): Promise<EpisodeView> {
  const { record, credit } = options.episode;
  const { loaded, format } = tokenizerFor(record.tokenizer);
  const { tokenizer } = loaded;
  const compactions = record.events.filter((e): e is CompactionEvent => e.kind === 'compaction');
  const segments = record.segments.map((seg, s) => {
    const prev = record.segments[s - 1];
    const windowTokens =
      seg.kind === 'summary' && prev?.kind === 'execution' && startsWith(seg.tokens, prev.tokens)
        ? prev.tokens.length
        : 0;
    return {
      index: seg.index,
      kind: seg.kind,
      policyVersion: seg.policyVersion,
      pieces: tokenPieces(seg.tokens, tokenizer),
      mask: seg.lossMask,
      roles: tokenRoles(seg.tokens, format),
      windowTokens,
      samplerLogprob: seg.logprobs.filter((_, t) => seg.lossMask[t] === 1),
      credit: credit?.segments[s] ?? null,
    };
  });
  const summaries: SummaryView[] = [];
  let k = 0;
  for (let s = 0; s < record.segments.length; s++) {
    const seg = record.segments[s]!;
    if (seg.kind !== 'summary') continue;
    const event = compactions[k++];
    const text = tokenizer.decode(summaryTokens(seg, format));
    summaries.push({
      segment: s,
      window: s - 1,
      compaction: k,
      text,
      ...(await summaryFacts({ env: record.env, seg, chat: { tokenizer, format }, text })),
      tailStepsKept: event?.tailStepsKept ?? null,
      tailStepsDropped: event?.tailStepsDropped ?? null,
    });
  }
  return EpisodeViewSchema.parse({
    source: options.source,
    iteration: options.iteration,
    index: options.index,
    episodeId: record.episodeId,
    env: record.env,
    seed: record.seed,
    outcome: record.outcome,
    reward: record.reward,
    compactions: record.compactions,
    steps: record.steps,
    generatedTokens: record.generatedTokens,
    contextWindow: record.contextWindow,
    maxWindows: record.maxWindows,
    tokenizer: loaded.name,
    segments,
    summaries,
    credit: credit ? { whitened: credit.whitened, policyUpdated: credit.policyUpdated } : null,
  });
}
