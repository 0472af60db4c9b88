import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { policyMask } from '../../rl/ppo-update.ts';
import { recomputeOld } from '../../rl/recompute-old.ts';
import type { TrainablePolicy } from '../../contracts/index.ts';
import { policyAdvantages } from '../../rl/policy-advantages.ts';
import type { PpoConfig } from '../../rl/ppo-config.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { sampleFileName, SampledEpisodeSchema, type EpisodeCredit } from '../../report/sample-files.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { segmentsAfter, type BatchSegment } from './iteration-stages.ts';

/**
 * Per-token credit of the sampled episodes (the ones the loop already renders to samples/), saved
 * for `crl view`: the advantages, returns, values and old log-probs the PPO update used (method
 * §4–6), plus entropy and the ratio pi_new / pi_old after the update. Written as one gzip'd JSONL
 * file per iteration, atomically (src/report/sample-files.ts has the format).
 */
export function writeCreditSamples(options: {
  dir: string;
  iteration: number;
  /** The first `count` episodes of the batch are saved. */
  count: number;
  records: readonly EpisodeRecord[];
  segments: readonly BatchSegment[];
  /** Trainer-side old log-probs, entropies and values, [T] per batch segment. */
  old: { oldLogprobs: Float32Array[]; oldEntropies: Float32Array[]; oldValues: Float32Array[] | null };
  advantages: Float32Array[]; // [T] per batch segment, before whitening
  returns: Float32Array[]; // [T] per batch segment
  ppo: Pick<PpoConfig, 'whitenAdvantages' | 'segmentWeights' | 'trainSummaries' | 'minibatchTokens'> & {
    policyUpdated: boolean;
  };
  /** The policy after this iteration's update (for the ratio). */
  policy: TrainablePolicy;
}): void {
  const { records, segments, old, ppo } = options;
  const count = Math.min(options.count, records.length);
  if (count === 0) return;
  // What the policy loss saw: the same masks and whitening as ppoUpdate (method §4–5).
  const pMasks = segments.map((s) => policyMask(s, ppo.trainSummaries));
  const after = segmentsAfter(segments);
  const used = policyAdvantages({
    segments: segments.map((s, i) => ({ kind: s.kind, episode: s.episode, segmentsAfter: after[i]! })),
    advantages: options.advantages,
    masks: pMasks,
    whiten: ppo.whitenAdvantages,
    ...(ppo.segmentWeights ? { segmentWeights: ppo.segmentWeights } : {}),
  });
  const picked = segments.map((s, i) => ({ s, i })).filter(({ s }) => s.episode < count);
  const afterUpdate = recomputeOld({
    segments: picked.map(({ s }) => ({ tokens: s.tokens, lossMask: s.lossMask })),
    policy: options.policy,
    batchTokens: ppo.minibatchTokens,
  }).oldLogprobs;

  const credits: EpisodeCredit[] = Array.from({ length: count }, () => ({
    whitened: ppo.whitenAdvantages !== false && ppo.whitenAdvantages !== 'none',
    policyUpdated: ppo.policyUpdated,
    segments: [],
  }));
  picked.forEach(({ s, i }, k) => {
    const at = (xs: Float32Array): number[] => generated(xs, s.lossMask);
    const inLoss = pMasks[i]!.some((m) => m === 1);
    const newLp = afterUpdate[k]!;
    const ratio = old.oldLogprobs[i]!.map((lp, t) => Math.exp(newLp[t]! - lp));
    credits[s.episode]!.segments.push({
      inPolicyLoss: inLoss,
      advantage: at(options.advantages[i]!),
      used: ppo.policyUpdated && inLoss ? at(used[i]!) : null,
      return: at(options.returns[i]!),
      value: old.oldValues ? at(old.oldValues[i]!) : null,
      oldLogprob: at(old.oldLogprobs[i]!),
      entropy: at(old.oldEntropies[i]!),
      ratio: at(ratio),
    });
  });
  const lines = records.slice(0, count).map((record, e) =>
    // Validated on the way out: a mismatch between record and credit is a bug, not a file to keep.
    JSON.stringify(SampledEpisodeSchema.parse({ iteration: options.iteration, record, credit: credits[e]! })),
  );
  writeFileAtomic(join(options.dir, sampleFileName(options.iteration)), gzipSync(`${lines.join('\n')}\n`));
}

/** Values at generated positions (loss mask 1), in order, rounded to 6 significant digits. */
function generated(xs: Float32Array, mask: Uint8Array): number[] {
  const out: number[] = [];
  for (let t = 0; t < mask.length; t++) if (mask[t] === 1) out.push(Number(xs[t]!.toPrecision(6)));
  return out;
}
