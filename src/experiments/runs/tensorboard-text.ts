import type { ChatLayout } from '../../rollout/chat-layout.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';

/**
 * One sampled episode as the markdown TensorBoard's text dashboard shows: its outcome and reward,
 * then the summary each compaction wrote (the generated tokens of each summary segment, without
 * the token that closed the turn), each in a code block so the model's words are shown as written.
 */
export function episodeMarkdown(record: EpisodeRecord, layout: ChatLayout): string {
  const lines = [
    `**${record.outcome}**, reward ${record.reward}: episode ${record.episodeId}, ${record.env} seed ${record.seed}, ` +
      `${record.steps} steps, ${record.compactions} compactions, ${record.generatedTokens} generated tokens`,
  ];
  const stop = layout.format.turns.assistant.close[0];
  let n = 0;
  for (const seg of record.segments) {
    if (seg.kind !== 'summary') continue;
    n++;
    const generated = seg.tokens.filter((_, t) => seg.lossMask[t] === 1);
    if (generated.length > 0 && generated[generated.length - 1] === stop) generated.pop();
    lines.push('', `summary ${n}:`, '', ...codeBlock(layout.tokenizer.decode(generated)));
  }
  if (n === 0) lines.push('', 'no compaction: the episode ended in its first window');
  return lines.join('\n');
}

/** A fenced block longer than any run of backticks inside, so the text cannot close it early. */
function codeBlock(text: string): string[] {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return [fence, text, fence];
}
