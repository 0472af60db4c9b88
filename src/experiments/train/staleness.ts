import type { EpisodeRecord } from '../../rollout/record.ts';

/**
 * Staleness of a segment trained by the weights after `trainedVersion` updates (docs/async.md):
 * trainedVersion minus the version the segment records. A segment records the version its first
 * sampler call started with (rollout/batch-scheduler.ts reads it before each call), the oldest of
 * its tokens, so a segment whose episode crossed a weight push counts with its oldest tokens.
 */
export function segmentStaleness(options: { trainedVersion: number; segmentVersion: number }): number {
  return options.trainedVersion - options.segmentVersion;
}

/** rollout/staleness_mean and rollout/staleness_max over the trained records' segments (0 when none). */
export function stalenessMetrics(options: {
  records: readonly EpisodeRecord[];
  trainedVersion: number;
}): Record<'rollout/staleness_mean' | 'rollout/staleness_max', number> {
  let n = 0;
  let sum = 0;
  let max = 0;
  for (const r of options.records)
    for (const s of r.segments) {
      const st = segmentStaleness({ trainedVersion: options.trainedVersion, segmentVersion: s.policyVersion });
      n++;
      sum += st;
      max = Math.max(max, st);
    }
  return { 'rollout/staleness_mean': n > 0 ? sum / n : 0, 'rollout/staleness_max': max };
}

/**
 * The bound's guard: throws when a trained segment is more than `maxStaleness` versions old. The
 * asynchronous loop starts no batch before the weights are recent enough (async-loop.ts), and a
 * segment records the oldest version its tokens may come from, so this never fires unless a
 * sampler mislabels its versions; it is there so such a bug stops the run instead of training on it.
 */
export function requireWithinStaleness(options: {
  records: readonly EpisodeRecord[];
  trainedVersion: number;
  maxStaleness: number;
  iteration: number;
}): void {
  const max = stalenessMetrics(options)['rollout/staleness_max'];
  if (max > options.maxStaleness)
    throw new Error(
      `internal: iteration ${options.iteration} would train a segment ${max} policy versions old (max-staleness ${options.maxStaleness})`,
    );
}
