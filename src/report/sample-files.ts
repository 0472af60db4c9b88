import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';
import { EpisodeRecordSchema } from '../rollout/record.ts';
import { RUN_FILES } from './run-files.ts';

/**
 * The sampled episodes of one training iteration with the per-token credit the PPO update used
 * (method §4–5), written by the training loop as `<run>/samples/iter-NNNNNN.episodes.jsonl.gz`
 * and read by `crl view`. One gzip'd JSON line per episode: `{ record, credit }`.
 *
 * Every credit array runs over a segment's generated tokens only (loss mask 1, in order), so
 * `advantage[j]` belongs to the j-th generated token; values are rounded to 6 significant digits.
 */
export const SegmentCreditSchema = z
  .object({
    /** The segment's tokens were in the policy loss M (summary tokens leave it when trainSummaries is off). */
    inPolicyLoss: z.boolean(),
    /** A_hat from the estimator, cross-trajectory factor included, before whitening (method §4). */
    advantage: z.array(z.number()),
    /** The advantage the policy loss used (whitened over the batch's M); null when the policy did not train on it. */
    used: z.array(z.number()).nullable(),
    /** Critic targets G_j (method §4). */
    return: z.array(z.number()),
    /** Old critic values V(p_j); null for critic-free estimators. */
    value: z.array(z.number()).nullable(),
    /** Trainer-recomputed old log-probs (method §6). */
    oldLogprob: z.array(z.number()),
    /** Entropy of the old policy at each generated token. */
    entropy: z.array(z.number()),
    /** pi_new / pi_old after this iteration's update: how far the update moved each token. */
    ratio: z.array(z.number()),
  })
  .strict();
export type SegmentCredit = z.infer<typeof SegmentCreditSchema>;

export const EpisodeCreditSchema = z
  .object({
    /** Advantages were whitened before the policy loss (ppo.whitenAdvantages). */
    whitened: z.boolean(),
    /** The policy trained this iteration (false during critic warm-up). */
    policyUpdated: z.boolean(),
    /** One entry per record segment, in order. */
    segments: z.array(SegmentCreditSchema),
  })
  .strict();
export type EpisodeCredit = z.infer<typeof EpisodeCreditSchema>;

export const SampledEpisodeSchema = z
  .object({ iteration: z.number().int().min(1), record: EpisodeRecordSchema, credit: EpisodeCreditSchema })
  .strict()
  .superRefine((e, ctx) => {
    const segs = e.record.segments;
    if (e.credit.segments.length !== segs.length) {
      ctx.addIssue({
        code: 'custom',
        message: `credit has ${e.credit.segments.length} segments, record ${segs.length}`,
      });
      return;
    }
    e.credit.segments.forEach((c, i) => {
      const n = segs[i]!.lossMask.reduce<number>((a, m) => a + m, 0);
      const arrays = [c.advantage, c.used, c.return, c.value, c.oldLogprob, c.entropy, c.ratio];
      if (arrays.some((a) => a !== null && a.length !== n))
        ctx.addIssue({ code: 'custom', path: ['credit', 'segments', i], message: `every array must hold ${n} values` });
    });
  });
export type SampledEpisode = z.infer<typeof SampledEpisodeSchema>;

export function sampleFileName(iteration: number): string {
  return `iter-${String(iteration).padStart(6, '0')}.episodes.jsonl.gz`;
}

const SAMPLE_FILE = /^iter-(\d{6,})\.episodes\.jsonl\.gz$/;

/** Iterations that have a sample file, ascending, with their paths. */
export function listSampleFiles(runDir: string): { iteration: number; path: string }[] {
  const dir = join(runDir, RUN_FILES.samples);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => ({ name, m: SAMPLE_FILE.exec(name) }))
    .filter((x) => x.m !== null)
    .map((x) => ({ iteration: Number(x.m![1]), path: join(dir, x.name) }))
    .sort((a, b) => a.iteration - b.iteration);
}

/** Reads and validates one sample file; throws an error naming the file and line. */
export function readSampleFile(path: string): SampledEpisode[] {
  const text = gunzipSync(readFileSync(path)).toString('utf8');
  const out: SampledEpisode[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const r = SampledEpisodeSchema.safeParse(JSON.parse(line));
    if (!r.success)
      throw new Error(
        `${path}:${i + 1}: not a sampled episode (${r.error.issues[0]?.path.join('.')}: ${r.error.issues[0]?.message})`,
      );
    out.push(r.data);
  });
  return out;
}
