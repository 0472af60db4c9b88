/**
 * The staleness bound on what rollout workers report (docs/async.md, decision 0043). A worker
 * that misreports the weights it sampled with (older than its job allowed, newer than any the
 * trainer had published, or past the bound) gets its episode left out and counted, and the run
 * goes on with the rest: with a real redis-server and real BullMQ workers running the episodes,
 * only the reported versions are changed, as a buggy or hostile worker would.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { startQueueWorker } from '../../queue/queue-worker.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../../queue/testing/redis-server.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { Rng } from '../../util/random.ts';
import { episodeJobs } from '../train/iteration-stages.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { queueSampling } from './queue-sampling.ts';
import { withinStaleness } from './queue-staleness.ts';
import { RolloutWorker } from './rollout-worker.ts';
import { train } from '../train/train-loop.ts';

const tokenizer = loadTokenizer('word');

/** Real records of `n` chunk-sum episodes run by the expert as a worker would, their segments labelled `version`. */
async function records(n: number, version: number): Promise<EpisodeRecord[]> {
  const worker = new RolloutWorker();
  const jobs = episodeJobs({
    family: getFamily('chunk-sum'),
    knobs: {},
    batchEpisodes: n,
    groupSize: 1,
    iteration: 1,
    rng: new Rng(3),
  });
  return Promise.all(
    jobs.map((job) =>
      worker.run(
        {
          run: 'r',
          session: 's',
          job: { ...job, policyVersion: version },
          tokenizer: { name: tokenizer.name, sha256: tokenizer.sha256 },
          rollout: {},
          sampler: { kind: 'expert' },
          stepDelayMs: 0,
        },
        new AbortController().signal,
      ),
    ),
  );
}

const relabel = (r: EpisodeRecord, v: number): EpisodeRecord => ({
  ...r,
  segments: r.segments.map((s) => ({ ...s, policyVersion: v })),
});

describe('withinStaleness', () => {
  it('keeps segments between the floor and the trained version within the bound, and leaves out the rest', async () => {
    const [a, b, c, d] = await records(4, 2);
    expect(a!.segments.length).toBeGreaterThan(0);
    const out = withinStaleness({
      records: [a!, relabel(b!, 1), relabel(c!, 4), relabel(d!, 2)],
      finalCount: 4,
      floor: 2,
      trainedVersion: 3,
      maxStaleness: 1,
    });
    expect(out.records.map((r) => r.episodeId)).toEqual([a!.episodeId, d!.episodeId]);
    expect(out.dropped.map((x) => x.reason)).toEqual([
      expect.stringContaining('version 1, older than the job'),
      expect.stringContaining('version 4, newer than the 3 this iteration trains'),
    ]);
    // A floor under the bound (a trainer bug) does not let a segment past it.
    const past = withinStaleness({ records: [a!], finalCount: 1, floor: 0, trainedVersion: 4, maxStaleness: 1 });
    expect(past.dropped[0]!.reason).toContain('2 versions old (max-staleness 1)');
  });
});

const available = redisAvailable('the staleness bound on rollout workers');

describe.skipIf(!available)('a worker that misreports its versions (real redis-server, BullMQ workers)', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('has its episodes left out and counted; the run trains the rest within the bound', async () => {
    const episodes = new RolloutWorker();
    const name = 'queue-staleness';
    // Episode 0 of every batch queued with weights after an update claims older ones than its
    // job allowed; episode 1 of iteration 2 claims weights that did not exist yet.
    const worker = await startQueueWorker({
      url: redis.url,
      name,
      concurrency: 4,
      run: async (m, signal) => {
        const r = await episodes.run(m, signal);
        if (m.job.episodeId.endsWith('-ep0') && m.job.policyVersion >= 1) return relabel(r, m.job.policyVersion - 1);
        if (m.job.episodeId === 'it2-ep1') return relabel(r, 5);
        return r;
      },
    });
    const runDir = join(mkdtempSync(join(tmpdir(), 'crl-queue-staleness-')), 'run');
    const config = parseTrainConfig({
      env: { name: 'chunk-sum' },
      model: { preset: 'tiny' },
      batchEpisodes: 4,
      iterations: 4,
      checkpointEvery: 4,
      sampleTrajectories: 0,
      maxStaleness: 1,
      queue: { url: redis.url, name, timeoutSec: 30 },
    });
    const logged: string[] = [];
    const queue = await queueSampling({ config, actor: 'expert', runDir, log: (l) => logged.push(l), secret: null });
    try {
      await train({ runDir, config, actor: 'expert', wrapStages: queue.wrap });
    } finally {
      await queue.close();
      await worker.close();
    }
    const lines = readMetrics(join(runDir, 'metrics.jsonl'));
    expect(lines.map((l) => l.iteration)).toEqual([1, 2, 3, 4]);
    for (const l of lines) {
      expect(l.metrics['rollout/staleness_max']).toBeLessThanOrEqual(1);
      expect(l.metrics['rollout/episodes']! + l.metrics['rollout/stale_dropped']!).toBe(4);
    }
    // Batches 1 and 2 are queued with the first weights (floor 0): only it2-ep1's future version
    // is left out there; batches 3 and 4 come after an update, so their episode 0 is too.
    expect(lines.map((l) => l.metrics['rollout/stale_dropped'])).toEqual([0, 1, 1, 1]);
    expect(logged.some((l) => /episode it2-ep1 left out: .*version 5, newer than the 1/.test(l))).toBe(true);
    expect(logged.some((l) => /episode it3-ep0 left out: .*older than the job's floor/.test(l))).toBe(true);
  });
});
