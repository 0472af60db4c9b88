import { describe, expect, it } from 'vitest';
import { kvLedger } from '../env/kv-ledger/index.ts';
import { runExpertEpisodes } from '../experiments/testing/runtime-episodes.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { ROLES } from './api-schema.ts';
import { buildEpisodeView } from './episode-view.ts';

describe('episode view on a subword tokenizer', () => {
  it('decodes Qwen3 records with their own tokenizer and chat format', async () => {
    const [record] = await runExpertEpisodes({
      family: kvLedger,
      knobs: { minChunks: 11, chunks: 11 }, // the fixed-horizon lengths: the episode compacts
      seeds: [1_000_001],
      writer: { lossy: 0.2 }, // keeps most facts: the view must show kept ones
      windows: 4,
      tokenizer: 'qwen3',
    });
    const view = await buildEpisodeView({
      episode: { record: { ...record!, tokenizer: 'qwen3' }, credit: null },
      source: 0,
      iteration: 0,
      index: 0,
    });
    const qwen = loadTokenizer('qwen3').tokenizer; // an independent decode of the same ids
    expect(view.tokenizer).toBe('qwen3');
    expect(record!.compactions).toBeGreaterThan(0);
    view.segments.forEach((s, i) => {
      const seg = record!.segments[i]!;
      expect(s.pieces.join('')).toBe(qwen.decode(seg.tokens)); // pieces tile the decoded text
      // Every generated token sits in an assistant turn (or is the id that closes it).
      seg.lossMask.forEach((m, t) => {
        if (m === 1) expect(['assistant', 'marker']).toContain(ROLES[s.roles![t]!]);
      });
      expect(s.roles!.some((r) => ROLES[r] === 'observation')).toBe(true);
    });
    for (const sum of view.summaries) {
      const seg = record!.segments[sum.segment]!;
      const generated = seg.tokens.filter((_, t) => seg.lossMask[t] === 1);
      expect(sum.text).toBe(qwen.decode(generated.slice(0, -1)));
      expect(sum.text).not.toMatch(/<\|im_end\|>/);
      expect(sum.facts!.length).toBeGreaterThan(0); // the family read the Qwen3 window through the chat format
      expect(sum.facts!.some((f) => f.kept)).toBe(true);
    }
  });
});
