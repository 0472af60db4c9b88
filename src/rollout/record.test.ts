import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/random.ts';
import { resolveRolloutConfig } from './config.ts';
import { parseRecordsJsonl, RecordParseError, recordsToJsonl, segmentArrays } from './record.ts';
import { readRecordsFile, RecordWriter } from './record-file.ts';
import { renderEpisode } from './render.ts';
import { runEpisodes } from './runner.ts';
import { chunkSumFamily } from '../env/chunk-sum.ts';
import { randomTokenSampler, RandomEnv } from './testing/scripted.ts';
import { textPolicySampler } from './text-policy-sampler.ts';

const source = loadTokenizer('word');

const tokenizer = source.tokenizer as WordTokenizer;
const { config, layout } = resolveRolloutConfig({ tokenizer: source });

async function someRecords() {
  const actor = randomTokenSampler({ tokenizer, rng: new Rng(2) });
  const episodes = [0, 1, 2].map((i) => ({
    episodeId: `r${i}`,
    env: new RandomEnv({ instructionWords: 4, maxObservationWords: 40, doneProbability: 0.05 }),
    seed: i,
  }));
  return runEpisodes({ episodes, config, layout, actor });
}

describe('episode records', () => {
  it('round-trip through JSONL text and files unchanged', async () => {
    const records = await someRecords();
    expect(parseRecordsJsonl(recordsToJsonl(records))).toEqual(records);
    const path = join(mkdtempSync(join(tmpdir(), 'crl-')), 'sub', 'out.jsonl');
    const w = new RecordWriter(path);
    records.forEach((r) => w.write(r));
    expect(readRecordsFile(path)).toEqual(records);
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(3);
    // A second writer on the same path is refused: the records already there stay.
    expect(() => new RecordWriter(path)).toThrow(/EEXIST/);
    expect(readRecordsFile(path)).toEqual(records);
  });

  it('names the line of an invalid record', async () => {
    const records = await someRecords();
    const lines = recordsToJsonl(records).trim().split('\n');
    const bad = JSON.parse(lines[1]!);
    bad.segments[0].lossMask.pop();
    const path = join(mkdtempSync(join(tmpdir(), 'crl-')), 'bad.jsonl');
    writeFileSync(path, [lines[0], JSON.stringify(bad)].join('\n'));
    expect(() => readRecordsFile(path)).toThrow(RecordParseError);
    expect(() => readRecordsFile(path)).toThrow(/line 2/);
    expect(() => parseRecordsJsonl('{"episodeId": 1}')).toThrow(/line 1/);
  });

  it('converts segments to typed arrays for the trainer (NaN for unknown logprobs)', async () => {
    const [rec] = await someRecords();
    const seg = rec!.segments[0]!;
    const a = segmentArrays(seg);
    expect(Array.from(a.tokens)).toEqual(seg.tokens);
    expect(Array.from(a.lossMask)).toEqual(seg.lossMask);
    seg.logprobs.forEach((lp, i) => {
      if (lp === null) expect(Number.isNaN(a.logprobs[i]!)).toBe(true);
      else expect(a.logprobs[i]!).toBeCloseTo(lp, 5);
    });
  });
});

describe('chunk-sum through the runtime', () => {
  const run = (writer: 'expert' | 'lossy', n: number) => {
    const actor = textPolicySampler({ tokenizer: source, policy: chunkSumFamily.expert, rng: new Rng(1) });
    const summarizer =
      writer === 'lossy'
        ? textPolicySampler({ tokenizer: source, policy: chunkSumFamily.summaryWriters.lossy(0.5), rng: new Rng(2) })
        : undefined;
    const episodes = Array.from({ length: n }, (_, i) => ({
      episodeId: `c${i}`,
      env: chunkSumFamily.create(),
      seed: 10_000 + i,
    }));
    return runEpisodes({ episodes, config, layout, actor, summarizer });
  };

  it('the expert solves every task, compacting on the way', async () => {
    const records = await run('expert', 10);
    expect(records.every((r) => r.outcome === 'success' && r.reward === 1)).toBe(true);
    expect(records.every((r) => r.compactions >= 1)).toBe(true);
  });

  it('a lossy summary writer lowers the pass rate', async () => {
    const records = await run('lossy', 20);
    expect(records.filter((r) => r.outcome === 'success').length).toBeLessThan(20);
  });

  it('replays: the same seeds and text policies give identical records', async () => {
    const a = await run('lossy', 6);
    const b = await run('lossy', 6);
    expect(recordsToJsonl(b)).toBe(recordsToJsonl(a));
  });

  it('renders an episode for humans with generated tokens bracketed', async () => {
    const [rec] = await run('expert', 1);
    const text = renderEpisode(rec!, layout);
    expect(text).toContain('outcome success');
    expect(text).toContain('compaction 1 after step');
    expect(text).toContain('== segment 1: summary');
    expect(text).toContain('[read chunk 0 <eot>]');
    expect(text).toMatch(/user {8}continue from the summary : goal 11 , chunk \d+ total \d+/);
  });
});
