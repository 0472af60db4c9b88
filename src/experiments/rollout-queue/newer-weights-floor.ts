import type { EnginePool } from '../../adapters/engine-pool.ts';
import { versionNumber } from '../../adapters/wanted-version.ts';
import type { TokenSampler } from '../../contracts/index.ts';

/**
 * One episode of a rollout worker under an asynchronous trainer (docs/async.md): the job names the
 * oldest weights it may be sampled with, and the replicas may serve newer ones by the time a
 * (slow) worker takes it. The episode keeps a floor: it starts at the newest version every live
 * replica is known to serve (never under the job's), rises to the version each answer reports,
 * and every request wants the floor or newer. The floor read before a call is what the call's
 * tokens are recorded with (batch-scheduler.ts), and every answer comes from weights at least
 * that new, so a segment's version is never newer than its oldest token's: staleness is never
 * under-counted, and once an answer reports newer weights the episode never goes back to older.
 */
export async function newerWeightsFloor(options: { pool: EnginePool; atLeast: number; seed?: number }): Promise<{
  sampler: TokenSampler;
  version: () => number;
}> {
  const { pool } = options;
  await pool.refresh(); // a job that waited in the queue finds the replicas on newer weights
  const served = pool
    .health()
    .filter((r) => r.up)
    .map((r) => versionNumber(r.weightVersion));
  // A replica whose version is unknown (not telling) could serve anything at or over the job's floor.
  const numbers = served.filter((v): v is number => v !== null);
  const known = numbers.length === served.length && numbers.length > 0 ? Math.min(...numbers) : 0;
  let floor = Math.max(options.atLeast, known);
  const inner = pool.sampler({ atLeastVersion: () => floor, seed: options.seed });
  return {
    version: () => floor,
    sampler: {
      sample: async (requests, params) => {
        const results = await inner.sample(requests, params);
        for (const r of results) {
          const v = versionNumber(r.weightVersion);
          if (v !== null && v > floor) floor = v;
        }
        return results;
      },
    },
  };
}
