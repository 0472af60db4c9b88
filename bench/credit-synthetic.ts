/**
 * What each credit choice of docs/credit.md does to an early summary's credit, on synthetic batches
 * (no model): episodes of 1, 2 and 3 windows with fixed success rates, a critic that knows each
 * segment's expected return under the system's own targets (p * the segment's share of R) up to
 * noise, and every RL system's advantages computed by the training
 * code itself (its config from systems.ts, the estimator registry, whitening and segment weights
 * of src/rl/policy-advantages.ts). For each segment role it prints, per system:
 *
 *   signal = mean effective advantage in episodes that succeeded - in episodes that failed
 *
 * where the effective advantage is the one the policy loss uses times the token's loss weight
 * relative to token-mean (so segment-mean's reweighting shows too). The same measure as
 * bench/credit-by-position.ts, which reads it from real runs.
 *
 *   node --import tsx bench/credit-synthetic.ts [--batches 400] [--exec 10] [--summary 7] [--noise 0.1]
 *     [--insight 0] [--seed 0] [--systems a,b,...]
 */
import { z } from 'zod';
import { parseTrainConfig } from '../src/config/load-config.ts';
import { aggregationWeights } from '../src/rl/aggregate-loss.ts';
import { estimateAdvantages } from '../src/rl/advantage-estimators.ts';
import { policyAdvantages } from '../src/rl/policy-advantages.ts';
import { policyMask } from '../src/rl/ppo-update.ts';
import { segmentRewards } from '../src/rl/segment-rewards.ts';
import { algorithmSpec } from '../src/experiments/train/algorithms.ts';
import { ESTIMATOR_CONFIGS, estimatorOf, segmentsAfter } from '../src/experiments/train/iteration-stages.ts';
import { systemOverrides } from '../src/experiments/reproduce/systems.ts';
import { Rng } from '../src/util/random.ts';
import { parseBenchArgs } from './bench-args.ts';

const args = parseBenchArgs(
  'credit-synthetic',
  z.object({
    /** Batches of 16 episodes (4 tasks x 4 samples, so broadcast has its groups). */
    batches: z.coerce.number().int().positive().default(400),
    /** Mean generated tokens of an execution window and of a summary (table4-mixed: ~2 per turn, ~7 per summary). */
    exec: z.coerce.number().positive().default(10),
    summary: z.coerce.number().positive().default(7),
    /** Critic noise (std of V around the success rate of the episode's length). */
    noise: z.coerce.number().nonnegative().default(0.1),
    /**
     * How much the critic knows the outcome once the context holds the summaries that decided it:
     * in window w of W (w >= 2) it predicts (1 - i) p + i R with i = insight (w - 1) / (W - 1).
     * 0: it never knows more than p (the default).
     */
    insight: z.coerce.number().min(0).max(1).default(0),
    seed: z.coerce.number().int().nonnegative().default(0),
    systems: z
      .string()
      .default(
        'compaction-rl,no-cross-trajectory-gae,segment-mean-loss,broadcast,full-trajectory-gae,inverse-count-weights,split-reward,discounted-reward,no-whitening,per-kind-whitening,per-position-whitening',
      ),
  }),
);

/** Windows per episode and its success rate: short tasks succeed more often (table4-mixed's mix). */
const LENGTHS = [
  { windows: 1, p: 0.9 },
  { windows: 2, p: 0.6 },
  { windows: 3, p: 0.4 },
];

interface Seg {
  episode: number;
  kind: 'execution' | 'summary';
  lossMask: Uint8Array; // [T] all generated: context tokens play no part here
  p: number; // the success rate of the episode's length
  noise: Float32Array; // [T] standard normal draws, scaled by --noise into the critic's error
  knows: number; // the critic's insight into this episode's outcome in this segment's context
}

function syntheticBatch(rng: Rng): { rewards: number[]; windows: number[]; taskKeys: string[]; segs: Seg[] } {
  const rewards: number[] = [];
  const windows: number[] = [];
  const taskKeys: string[] = [];
  const segs: Seg[] = [];
  for (let task = 0; task < 4; task++) {
    const length = LENGTHS[rng.int(LENGTHS.length)]!;
    for (let k = 0; k < 4; k++) {
      const e = rewards.length;
      rewards.push(rng.next() < length.p ? 1 : 0);
      windows.push(length.windows);
      taskKeys.push(`t${task}`);
      for (let w = 0; w < length.windows; w++) {
        const kinds: Seg['kind'][] = w < length.windows - 1 ? ['execution', 'summary'] : ['execution'];
        for (const kind of kinds) {
          const mean = kind === 'execution' ? args.exec : args.summary;
          const n = Math.max(1, Math.round(mean * (0.75 + 0.5 * rng.next())));
          segs.push({
            episode: e,
            kind,
            lossMask: new Uint8Array(n).fill(1),
            p: length.p,
            noise: Float32Array.from({ length: n }, () => rng.normal()),
            knows: length.windows > 1 ? (args.insight * w) / (length.windows - 1) : 0,
          });
        }
      }
    }
  }
  return { rewards, windows, taskKeys, segs };
}

/** The advantage each policy-loss token gets under a system, times its relative loss weight. */
function effective(system: string, batch: ReturnType<typeof syntheticBatch>): Float32Array[] {
  const config = parseTrainConfig(systemOverrides(system));
  const algorithm = algorithmSpec(config.algorithm);
  const estimator = estimatorOf({ algorithm, config });
  // A calibrated critic: V = p * (the segment's return target when R = 1) + noise. With gamma = 1
  // and lambdaCritic = 1 every token's target is its segment's reward (R, R / K or gamma^(K-k) R).
  const share = config.advantage.segmentReward ?? 'shared';
  const episodes = batch.rewards.map((reward, e) => {
    const segments = batch.segs.filter((s) => s.episode === e);
    const ratio = segmentRewards({
      reward: 1,
      generated: segments.map((s) => s.lossMask.length),
      mode: share,
      ...(config.advantage.segmentDiscount !== undefined ? { discount: config.advantage.segmentDiscount } : {}),
    });
    return {
      taskKey: batch.taskKeys[e]!,
      reward,
      segments: segments.map((s, k) => ({
        kind: s.kind,
        lossMask: s.lossMask,
        values: s.noise.map((z) => ((1 - s.knows) * s.p + s.knows * reward) * ratio[k]! + args.noise * z),
      })),
    };
  });
  const out = estimateAdvantages({ estimator, episodes, config: ESTIMATOR_CONFIGS[estimator](config) });
  const advantages = out.advantages.flat();
  const masks = batch.segs.map((s) => policyMask(s, config.ablation.trainSummaries));
  const after = segmentsAfter(batch.segs);
  const used = policyAdvantages({
    segments: batch.segs.map((s, i) => ({ kind: s.kind, episode: s.episode, segmentsAfter: after[i]! })),
    advantages,
    masks,
    whiten: config.ppo.whitenAdvantages,
    ...(config.ppo.segmentWeights ? { segmentWeights: config.ppo.segmentWeights } : {}),
  });
  const w = aggregationWeights({ masks, mode: config.ablation.lossAggregation });
  const total = masks.reduce((a, m) => a + m.reduce((x, y) => x + y, 0), 0);
  return used.map((a, s) => a.map((x, t) => x * w[s]![t]! * total));
}

const ROLES = [
  ['1 window: execution', 1, 0],
  ['2 windows: first window', 2, 2],
  ['2 windows: summary', 2, 1],
  ['2 windows: last window', 2, 0],
  ['3 windows: first window', 3, 4],
  ['3 windows: first summary', 3, 3],
  ['3 windows: second window', 3, 2],
  ['3 windows: second summary', 3, 1],
  ['3 windows: last window', 3, 0],
] as const;

const systems = args.systems.split(',');
const rng = new Rng(args.seed);
// [system][role] -> sums of the effective advantage per token, by outcome, and of its magnitude.
const acc = systems.map(() => ROLES.map(() => ({ win: 0, nWin: 0, lose: 0, nLose: 0, abs: 0 })));
for (let b = 0; b < args.batches; b++) {
  const batch = syntheticBatch(rng);
  const after = segmentsAfter(batch.segs);
  systems.forEach((system, si) => {
    const eff = effective(system, batch);
    batch.segs.forEach((seg, s) => {
      const r = ROLES.findIndex(([, w, a]) => w === batch.windows[seg.episode] && a === after[s]);
      const cell = acc[si]![r]!;
      for (const x of eff[s]!) {
        cell.abs += Math.abs(x);
        if (batch.rewards[seg.episode] === 1) {
          cell.win += x;
          cell.nWin++;
        } else {
          cell.lose += x;
          cell.nLose++;
        }
      }
    });
  });
}

const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');
console.log(
  `signal (mean effective advantage, success − failure), ${args.batches} batches of 16, exec ~${args.exec}, summary ~${args.summary} tokens, critic noise ${args.noise}, insight ${args.insight}, seed ${args.seed}\n`,
);
console.log(`| segment | ${systems.join(' | ')} |`);
console.log(`|---|${systems.map(() => '---').join('|')}|`);
ROLES.forEach(([name], r) => {
  const cells = systems.map((_, si) => {
    const c = acc[si]![r]!;
    return fmt(c.win / c.nWin - c.lose / c.nLose);
  });
  console.log(`| ${name} | ${cells.join(' | ')} |`);
});
console.log(`\nmean |effective advantage|\n`);
console.log(`| segment | ${systems.join(' | ')} |`);
console.log(`|---|${systems.map(() => '---').join('|')}|`);
ROLES.forEach(([name], r) => {
  const cells = systems.map((_, si) => {
    const c = acc[si]![r]!;
    return fmt(c.abs / (c.nWin + c.nLose));
  });
  console.log(`| ${name} | ${cells.join(' | ')} |`);
});
