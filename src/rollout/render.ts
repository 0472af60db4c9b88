import { parseChat } from './parse-chat.ts';
import type { EpisodeRecord, Segment } from './record.ts';
import type { ChatLayout } from './chat-layout.ts';
import type { Tokenizer } from '../contracts/index.ts';

/**
 * A human-readable rendering of one episode: a header, then each segment's turns. Tokens the
 * policy generated in that segment are shown in [brackets] so loss masks can be eyeballed.
 */
export function renderEpisode(record: EpisodeRecord, layout: ChatLayout): string {
  const lines: string[] = [
    `episode ${record.episodeId}  env ${record.env}  seed ${record.seed}  outcome ${record.outcome}  reward ${record.reward}`,
    `steps ${record.steps}  compactions ${record.compactions}/${record.maxWindows - 1}  generated tokens ${record.generatedTokens}  C ${record.contextWindow}`,
  ];
  for (const e of record.events) {
    if (e.kind === 'compaction') {
      lines.push(
        `  compaction ${e.compaction} after step ${e.afterStep}: window ${e.windowTokensBefore} -> ${e.windowTokensAfter} tokens, ` +
          `summary ${e.summaryTokens}, tail kept ${e.tailStepsKept} dropped ${e.tailStepsDropped}`,
      );
    } else if (e.kind === 'observation-cut') {
      lines.push(`  observation of step ${e.step} cut: ${e.originalTokens} -> ${e.keptTokens} tokens`);
    } else {
      lines.push(
        `  ${e.fault ?? 'environment'} fault (${e.cause}) during ${e.during} after step ${e.step}: ${e.message}`,
      );
    }
  }
  for (const seg of record.segments) lines.push('', ...renderSegment(seg, layout));
  return lines.join('\n') + '\n';
}

function renderSegment(seg: Segment, layout: ChatLayout): string[] {
  const generated = seg.lossMask.reduce<number>((a, b) => a + b, 0);
  const head = `== segment ${seg.index}: ${seg.kind}, ${seg.tokens.length} tokens, ${generated} generated, policy v${seg.policyVersion} ==`;
  // Bracket the generated runs by rendering them separately, then parse the whole for turns.
  const turns = parseChat(seg.tokens, layout);
  const marked = markGenerated(seg, layout.tokenizer);
  return [head, ...turns.map((t) => `${t.role.padEnd(11)} ${t.content}`), `generated: ${marked}`];
}

function markGenerated(seg: Segment, tokenizer: Tokenizer): string {
  const runs: string[] = [];
  let start = -1;
  for (let i = 0; i <= seg.tokens.length; i++) {
    const on = i < seg.tokens.length && seg.lossMask[i] === 1;
    if (on && start < 0) start = i;
    if (!on && start >= 0) {
      runs.push(`[${tokenizer.decode(seg.tokens.slice(start, i))}]`);
      start = -1;
    }
  }
  return runs.join(' ') || '(none)';
}
