/**
 * A rollout worker's episode under an asynchronous trainer (docs/async.md) against a real
 * `crl serve` process: a job that waited in the queue while the trainer pushed newer weights is
 * recorded with the weights the engine serves when it starts (not the older ones it was queued
 * with), a push in the middle raises the version of the calls after it, and older weights never
 * answer: the episode waits for weights at least as new as its floor and then fails, naming them.
 * Through the RolloutWorker, an `orNewer` job's segments carry the version the engine served.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnginePool } from '../../adapters/engine-pool.ts';
import { startServe, tinyCheckpoint, type Served } from '../../adapters/testing/crl-serve.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { getFamily } from '../../env/registry.ts';
import { Rng } from '../../util/random.ts';
import { episodeJobs } from '../train/iteration-stages.ts';
import { newerWeightsFloor } from './newer-weights-floor.ts';
import { RolloutWorker } from './rollout-worker.ts';

const TOKEN = 'newer-weights-floor-test-token';
const word = loadTokenizer('word');
const { tokenizer } = word;
const prompt = tokenizer.encode('<bos> <sys> you are an agent <eot> <user>');
const params = { temperature: 1, topP: 1 };
const ask = { prompt, maxTokens: 2, stopTokens: [], episodeId: 'e1' };

describe('newerWeightsFloor (a real crl serve process)', { timeout: 120_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-newer-weights-'));
  const env = { ...process.env, CRL_ADMIN_TOKEN: TOKEN };
  let served: Served;
  beforeAll(async () => {
    await tinyCheckpoint(join(root, 'policy'), { seed: 1 });
    served = await startServe(['--policy', join(root, 'policy'), '--weights-dir', root], env);
  });
  afterAll(() => served?.stop());

  it('starts at the served version, rises with a push, and never takes older weights', async () => {
    // The trainer's pool publishes; the worker's own pool only samples.
    const trainer = new EnginePool({ urls: [served.url] });
    await trainer.publish({ modelPath: join(root, 'policy'), version: '2', token: TOKEN });
    const worker = new EnginePool({ urls: [served.url], probeMs: 50, waitMs: 1_500 });

    // Queued with the weights after 1 update; the engine has moved on to 2 by the time it runs.
    const episode = await newerWeightsFloor({ pool: worker, atLeast: 1 });
    expect(episode.version()).toBe(2);
    const [first] = await episode.sampler.sample([ask], params);
    expect(first!.weightVersion).toBe('2');
    await trainer.publish({ modelPath: join(root, 'policy'), version: '3', token: TOKEN });
    const [second] = await episode.sampler.sample([ask], params);
    expect(second!.weightVersion).toBe('3');
    expect(episode.version()).toBe(3); // the calls after the push are recorded with it

    // The engine goes back to older weights (a replica restarted from an old checkpoint): the
    // episode does not take them, it waits its wait and fails, naming what it wanted.
    await trainer.publish({ modelPath: join(root, 'policy'), version: '1', token: TOKEN });
    await expect(episode.sampler.sample([ask], params)).rejects.toThrow(/serving weight version 3 or newer/);

    // A new episode's floor is its job's when the engine serves older weights than that.
    expect((await newerWeightsFloor({ pool: worker, atLeast: 2 })).version()).toBe(2);
  });

  it("a worker's episode of an orNewer job records the weights the engine serves, not the job's older floor", async () => {
    const trainer = new EnginePool({ urls: [served.url] });
    await trainer.publish({ modelPath: join(root, 'policy'), version: '5', token: TOKEN });
    const [job] = episodeJobs({
      family: getFamily('chunk-sum'),
      knobs: {},
      batchEpisodes: 1,
      groupSize: 1,
      iteration: 1,
      rng: new Rng(4),
    });
    const record = await new RolloutWorker().run(
      {
        run: 'r',
        session: 's',
        job: { ...job!, policyVersion: 4 },
        tokenizer: { name: word.name, sha256: word.sha256 },
        rollout: {},
        sampler: { kind: 'engines', urls: [served.url], protocol: 'sglang', weightVersion: '4', orNewer: true },
        stepDelayMs: 0,
      },
      new AbortController().signal,
    );
    expect(record.segments.length).toBeGreaterThan(0);
    expect(record.segments.map((s) => s.policyVersion)).toEqual(record.segments.map(() => 5));
  });
});
