import { describe, expect, it } from 'vitest';
import { describeFault, faultMetrics, givenUpRecord, splitFaults } from './faults.ts';
import { EpisodeRecordSchema, type EpisodeRecord } from './record.ts';

const given = givenUpRecord({
  episodeId: 'it2-ep1',
  env: 'chunk-sum',
  seed: 7,
  tokenizer: 'word',
  fault: 'engine',
  message: 'the queue gave its job up: every replica is down',
  contextWindow: 256,
  maxWindows: 4,
});

describe("a rollout queue's given-up job as a faulted record", () => {
  it('is a valid record that says whose fault and why', () => {
    expect(EpisodeRecordSchema.parse(given)).toEqual(given);
    expect(describeFault(given)).toBe(
      'it2-ep1: engine fault during job: the queue gave its job up: every replica is down',
    );
  });

  it('is left out and counted like any fault', () => {
    const ok: EpisodeRecord = { ...given, episodeId: 'it2-ep0', outcome: 'success', reward: 1, events: [] };
    expect(splitFaults({ records: [ok, given], batchEpisodes: 2 })).toEqual({
      trained: [ok],
      leftOut: [given],
      retried: [],
    });
    expect(faultMetrics({ records: [ok, given], batchEpisodes: 2 })).toMatchObject({
      'rollout/fault_engine': 1,
      'rollout/fault_left_out': 1,
      'rollout/fault_rate': 0.5,
    });
  });
});
