import { isFault } from '../../rollout/faults.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { segmentStaleness } from '../train/staleness.ts';

/**
 * The staleness bound on records that rollout workers return (docs/async.md, decision 0043). A
 * worker reports the version each segment was sampled with; the trainer holds it to what the
 * job allowed and to the bound before anything trains on it. An episode is left out (and counted,
 * `rollout/stale_dropped`) when one of its segments reports
 * - a version older than its job's floor (the weights the trainer had published when it queued
 *   the job; a worker must sample with those or newer),
 * - a version newer than the weights the iteration trains (no such weights existed when it ran),
 * - or a staleness over the bound.
 * Jobs are queued only once the trainer's weights are recent enough, and a worker samples with
 * the job's floor or newer, so none of these happens unless a worker misreports its versions;
 * the episode is then dropped rather than the run stopped, as a job the queue gave up would be.
 * Faulted attempts that were run again, and whose retry is kept, never train and are not checked.
 */
export function withinStaleness(options: {
  /** The batch's final records in job order, then the superseded faulted attempts (queue-sampling.ts). */
  records: readonly EpisodeRecord[];
  /** How many of `records` are final (the rest are superseded attempts). */
  finalCount: number;
  /** The jobs' floor: the version the trainer had published when it queued them (their policyVersion). */
  floor: number;
  /** The version the iteration trains: iteration - 1. */
  trainedVersion: number;
  maxStaleness: number;
}): { records: EpisodeRecord[]; dropped: { episodeId: string; reason: string }[] } {
  const { trainedVersion, maxStaleness } = options;
  const dropped: { episodeId: string; reason: string }[] = [];
  const droppedBases = new Set<string>();
  const base = (id: string) => id.replace(/-retry\d+$/, '');
  const kept: EpisodeRecord[] = [];
  options.records.forEach((r, i) => {
    if (i >= options.finalCount) {
      // A superseded attempt goes with its episode: dropped when the episode is.
      if (!droppedBases.has(base(r.episodeId))) kept.push(r);
      return;
    }
    const reason = isFault(r) ? null : outOfBound({ record: r, floor: options.floor, trainedVersion, maxStaleness });
    if (reason === null) kept.push(r);
    else {
      dropped.push({ episodeId: r.episodeId, reason });
      droppedBases.add(base(r.episodeId));
    }
  });
  return { records: kept, dropped };
}

/** Why a record's versions break its job's floor or the bound; null when they keep to both. */
function outOfBound(options: {
  record: EpisodeRecord;
  floor: number;
  trainedVersion: number;
  maxStaleness: number;
}): string | null {
  for (const s of options.record.segments) {
    const v = s.policyVersion;
    if (v < options.floor)
      return `its worker reports a segment sampled with version ${v}, older than the job's floor ${options.floor}`;
    if (v > options.trainedVersion)
      return `its worker reports a segment sampled with version ${v}, newer than the ${options.trainedVersion} this iteration trains`;
    const staleness = segmentStaleness({ trainedVersion: options.trainedVersion, segmentVersion: v });
    if (staleness > options.maxStaleness)
      return `a segment sampled with version ${v} is ${staleness} versions old (max-staleness ${options.maxStaleness})`;
  }
  return null;
}
