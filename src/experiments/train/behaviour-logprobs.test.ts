import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import type { PolicyModel } from '../../model/network/policy.ts';
import { referenceHeads } from '../../model/network/reference-f64.ts';
import { sampledLogprob } from '../../model/network/sampling-transform.ts';
import { UNKNOWN_LOGIT } from '../../model/tokenizer/vocab-map.ts';
import { importanceWeights } from '../../rl/off-policy.ts';
import type { PpoSegment } from '../../rl/ppo-update.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { createRunDir } from '../runs/run-dir.ts';
import { train } from './train-loop.ts';

/**
 * End to end (docs/async.md, method §6): a run that samples one batch ahead (S = 1) at
 * temperature 0.7 and top-p 0.9 with truncated importance sampling. At each update, the
 * importance weight of every optimized token must be the ratio of the current weights' and the
 * behaviour weights' probabilities of it, each through the same temperature / top-p transform,
 * computed here by hand on the float64 reference model from snapshots of both weights.
 */
const T = 0.7;
const TOP_P = 0.9;
const CAP = 1000; // nothing capped: the raw weights are the ones compared

/**
 * Each generated token's log-prob under some weights through the transform (float64 reference):
 * `lp` exactly (-Infinity outside the nucleus), `scored` as the trainer scores it.
 */
function handLogprobs(
  policy: PolicyModel,
  params: Float64Array,
  seg: PpoSegment,
  sampling = { temperature: T, topP: TOP_P },
): Map<number, { lp: number; scored: number }> {
  const tokens = policy.vocab.toInternal(seg.tokens);
  const r = referenceHeads({ cfg: policy.config, specs: policy.net.specs, params, tokens, head: 'lm' });
  const out = new Map<number, { lp: number; scored: number }>();
  for (let t = 1; t < tokens.length; t++) {
    if (seg.lossMask[t] !== 1) continue;
    const row = Array.from(r.logits[t - 1]!);
    if (policy.vocab.unknown !== null) row[policy.vocab.unknown] = UNKNOWN_LOGIT; // as the model pins it
    const lp = sampledLogprob({ row, token: tokens[t]!, ...sampling });
    out.set(t, { lp, scored: lp > -Infinity ? lp : overNucleusAndToken(row, tokens[t]!) });
  }
  return out;
}

/**
 * A token outside the nucleus, as the trainer scores it (sampling-transform.ts): over the nucleus
 * plus itself, since its exact log-prob, -Infinity, is no number a loss can carry.
 */
function overNucleusAndToken(row: number[], token: number): number {
  const kept = row.flatMap((_, j) =>
    j === token || sampledLogprob({ row, token: j, temperature: T, topP: TOP_P }) > -Infinity ? [row[j]! / T] : [],
  );
  const mx = Math.max(...kept);
  return row[token]! / T - mx - Math.log(kept.reduce((a, u) => a + Math.exp(u - mx), 0));
}

describe('behaviour log-probs of a stale batch at temperature 0.7, top-p 0.9', () => {
  it('give importance weights equal to the hand-computed ratio of the two transformed policies', async () => {
    const config = parseTrainConfig({
      env: { name: 'chunk-sum' },
      model: { preset: 'tiny' },
      batchEpisodes: 2,
      iterations: 3,
      checkpointEvery: 3,
      maxStaleness: 1,
      rollout: { temperature: T, topP: TOP_P },
      optim: { policyLr: 0.01 }, // large steps: the behaviour and current weights differ visibly
      // The entropy bonus moves the weights even when every episode fails alike (zero advantages).
      ppo: { criticWarmupIterations: 0, offPolicy: 'tis', tisCap: CAP, entropyCoef: 0.5 },
      sampleTrajectories: 0,
    });
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-behaviour-')), 'run');
    createRunDir({ dir, system: 'compaction-rl', config });
    const behaviourOf = new Map<number, Float64Array>(); // iteration -> the weights its batch was sampled with
    const inFlight = new Set<Promise<unknown>>();
    const checked: {
      iteration: number;
      tokens: number;
      moved: number;
      outside: number;
      iwMean: number;
      handMean: number;
    }[] = [];
    await train({
      runDir: dir,
      config,
      actor: 'policy',
      wrapStages: (stages, run) => ({
        ...stages,
        sample: (input) => {
          // The embedded sampler reads the live weights: the snapshot at the start is the batch's
          // behaviour policy as long as no update runs before the batch is sampled (below).
          behaviourOf.set(input.iteration, Float64Array.from(run.models.policy.net.params));
          const p = Promise.resolve(stages.sample(input));
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
          return p;
        },
        update: async (input) => {
          while (inFlight.size > 0) await Promise.all(inFlight);
          const policy = run.models.policy;
          const current = Float64Array.from(policy.net.params);
          const behaviour = behaviourOf.get(input.iteration)!;
          const masks = input.batch.map((s) => s.lossMask);
          const [iw, ppo] = [
            importanceWeights({
              oldLogprobs: input.batch.map((s) => s.oldLogprobs),
              behaviourLogprobs: input.batch.map((s) => s.behaviourLogprobs!),
              masks,
              offPolicy: { correction: 'tis', cap: CAP, level: 'token' },
            }),
            await stages.update(input),
          ];
          let tokens = 0;
          let moved = 0;
          let outside = 0; // tokens the current weights no longer propose
          let handSum = 0;
          input.batch.forEach((seg, s) => {
            const b = handLogprobs(policy, behaviour, seg);
            const c = handLogprobs(policy, current, seg);
            for (const [t, { lp: lb }] of b) {
              expect(lb).toBeGreaterThan(-Infinity); // every token was drawn from the behaviour nucleus
              const { lp, scored } = c.get(t)!;
              const hand = Math.exp(scored - lb);
              expect(Math.abs(iw[s]!.raw[t]! - hand)).toBeLessThan(1e-3 * Math.max(1, hand));
              tokens++;
              handSum += hand;
              if (lp === -Infinity) outside++;
              if (Math.abs(hand - 1) > 1e-2) moved++;
            }
          });
          checked.push({
            iteration: input.iteration,
            tokens,
            moved,
            outside,
            iwMean: ppo['off_policy/iw_mean']!,
            handMean: handSum / tokens,
          });
          return ppo;
        },
      }),
    });
    expect(checked.map((c) => c.iteration)).toEqual([1, 2, 3]);
    const lines = readMetrics(join(dir, 'metrics.jsonl'));
    for (const c of checked) {
      expect(c.tokens).toBeGreaterThan(20);
      const stale = lines[c.iteration - 1]!.metrics['rollout/staleness_max']!;
      // Batch 1 is sampled by the weights it trains: every weight 1. Later batches are one update old.
      expect(stale).toBe(c.iteration === 1 ? 0 : 1);
      if (stale === 0) expect(c.moved + c.outside).toBe(0);
      else expect(c.moved).toBeGreaterThan(c.tokens / 4); // the check compares ratios away from 1
      expect(Math.abs(c.iwMean - c.handMean)).toBeLessThan(1e-3 * c.handMean);
      console.log(
        `iteration ${c.iteration}: ${c.tokens} tokens, ${c.moved} with weight off 1 by > 1%, ${c.outside} outside the current nucleus, iw_mean ${c.iwMean.toFixed(4)}`,
      );
    }
  }, 600_000);

  it('at temperature 1 and top-p 1 are log_softmax of the logits, as before', async () => {
    const config = parseTrainConfig({
      env: { name: 'chunk-sum' },
      model: { preset: 'tiny' },
      batchEpisodes: 2,
      iterations: 1,
      checkpointEvery: 1,
      ppo: { criticWarmupIterations: 0 },
      sampleTrajectories: 0,
    });
    expect(config.rollout).toMatchObject({ temperature: 1, topP: 1 }); // the defaults
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-behaviour-')), 'run');
    createRunDir({ dir, system: 'compaction-rl', config });
    let tokens = 0;
    await train({
      runDir: dir,
      config,
      actor: 'policy',
      wrapStages: (stages, run) => ({
        ...stages,
        update: (input) => {
          const policy = run.models.policy;
          const params = Float64Array.from(policy.net.params);
          for (const seg of input.batch)
            for (const [t, { lp }] of handLogprobs(policy, params, seg, { temperature: 1, topP: 1 })) {
              // The plain log-sum-exp of the model's logits, recorded and recomputed alike.
              expect(Math.abs(seg.behaviourLogprobs![t]! - lp)).toBeLessThan(1e-4);
              expect(Math.abs(seg.oldLogprobs[t]! - lp)).toBeLessThan(1e-4);
              tokens++;
            }
          return stages.update(input);
        },
      }),
    });
    expect(tokens).toBeGreaterThan(20);
  }, 600_000);
});
