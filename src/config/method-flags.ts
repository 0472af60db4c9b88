import type { ConfigFlag } from './config-flag.ts';

/**
 * The config flags of the method (config-flags.ts): the run's name and algorithm, the ablations,
 * credit assignment, the task, the rollout, the PPO update and the learning rates.
 */
export const METHOD_FLAGS: readonly ConfigFlag[] = [
  { flag: 'name', path: ['name'], kind: 'string', help: 'run label used in reports' },
  { flag: 'algorithm', path: ['algorithm'], kind: 'string', help: 'compaction-rl | ppo-single-window | broadcast' },
  {
    flag: 'train-summaries',
    path: ['ablation', 'trainSummaries'],
    kind: 'boolean',
    help: 'summary tokens in the policy loss (true|false)',
  },
  {
    flag: 'loss-aggregation',
    path: ['ablation', 'lossAggregation'],
    kind: 'string',
    help: 'token-mean | segment-mean',
  },
  {
    flag: 'cross-trajectory',
    path: ['ablation', 'crossTrajectory'],
    kind: 'boolean',
    help: 'cross-trajectory GAE correction (true|false)',
  },
  {
    flag: 'estimator',
    path: ['advantage', 'estimator'],
    kind: 'string',
    help: 'advantage estimator of compaction-rl: compaction-gae (default) | full-trajectory-gae (docs/credit.md)',
  },
  {
    flag: 'segment-reward',
    path: ['advantage', 'segmentReward'],
    kind: 'string',
    help: "how R reaches each segment's local GAE: shared (default) | split (R/K) | discounted (gamma^(K-k) R)",
  },
  {
    flag: 'segment-discount',
    path: ['advantage', 'segmentDiscount'],
    kind: 'number',
    help: 'gamma of --segment-reward discounted (default 0.9)',
  },
  {
    flag: 'segment-weights',
    path: ['ppo', 'segmentWeights'],
    kind: 'string',
    help: 'policy-loss weight per segment: uniform (default) | inverse-count (1/N of its episode, mean 1)',
  },
  {
    flag: 'whiten',
    path: ['ppo', 'whitenAdvantages'],
    kind: 'boolean',
    help: 'advantage whitening: batch (default, = true) | none (= false) | per-kind | per-position',
  },
  {
    flag: 'env',
    path: ['env', 'name'],
    kind: 'string',
    help: 'task family, or harbor:PATH (a folder of Harbor task folders; its knobs: sandbox, commandTimeoutSec, outputBytes)',
  },
  { flag: 'knobs', path: ['env', 'knobs'], kind: 'json', help: 'task knobs as JSON, e.g. \'{"chunks":8}\'' },
  // After --knobs: flagsToConfig sets it inside the object --knobs gave.
  {
    flag: 'sandbox',
    path: ['env', 'knobs', 'sandbox'],
    kind: 'string',
    help: "for task folders (harbor:PATH): auto | docker | bwrap, as crl run's --sandbox (the knob env.knobs.sandbox)",
  },
  { flag: 'context', path: ['rollout', 'contextWindow'], kind: 'int', help: 'C: context window in tokens' },
  { flag: 'threshold', path: ['rollout', 'compactThreshold'], kind: 'int', help: 'T_comp: compaction threshold' },
  { flag: 'tail', path: ['rollout', 'tailSteps'], kind: 'int', help: 'k: tail steps kept verbatim' },
  { flag: 'windows', path: ['rollout', 'maxWindows'], kind: 'int', help: 'K: most windows per episode' },
  { flag: 'summary-tokens', path: ['rollout', 'summaryMaxTokens'], kind: 'int', help: 'L_sum: most summary tokens' },
  {
    flag: 'temperature',
    path: ['rollout', 'temperature'],
    kind: 'number',
    help: 'sampling temperature, > 0 in training (default 1); the trainer scores log-probs under the same temperature and top-p (docs/method.md §6)',
  },
  { flag: 'top-p', path: ['rollout', 'topP'], kind: 'number', help: 'nucleus sampling mass in (0, 1] (default 1)' },
  {
    flag: 'agent-format',
    path: ['rollout', 'agentFormat'],
    kind: 'string',
    help: "how the agent acts: text (default; its turn is the action) | tools (one tool call per turn in its model's own syntax; docs/agent-format.md)",
  },
  {
    flag: 'thinking',
    path: ['rollout', 'thinking'],
    kind: 'boolean',
    help: 'tools format: on (= true), a <think> block before each call, trained like any generated token | off (= false, default)',
  },
  { flag: 'batch', path: ['batchEpisodes'], kind: 'int', help: 'B: episodes per iteration' },
  { flag: 'epochs', path: ['ppo', 'epochs'], kind: 'int', help: 'E: epochs per iteration' },
  {
    flag: 'minibatch-tokens',
    path: ['ppo', 'minibatchTokens'],
    kind: 'int',
    help: 'token budget of one PPO minibatch (default 4096); activations grow with it (docs/engine-scale.md "Training memory")',
  },
  {
    flag: 'target-kl',
    path: ['ppo', 'targetKl'],
    kind: 'number',
    help: "early stop: skip the rest of an iteration's policy steps once approx KL > 1.5 x this (default off)",
  },
  {
    flag: 'uniform-rewards',
    path: ['ppo', 'uniformRewards'],
    kind: 'string',
    help: 'a batch whose episodes all have the same reward: update (default, the method) | skip-policy (train the critic only; docs/method.md)',
  },
  {
    flag: 'off-policy',
    path: ['ppo', 'offPolicy'],
    kind: 'string',
    help: "correction of segments sampled by older weights: none (default) | tis (truncated importance sampling) | decoupled (AReaL's decoupled PPO); docs/async.md",
  },
  {
    flag: 'tis-cap',
    path: ['ppo', 'tisCap'],
    kind: 'number',
    help: 'cap on the importance weight exp(logp_old - logp_sampler): tis truncates at it, decoupled leaves tokens above it out (default 2)',
  },
  {
    flag: 'tis-level',
    path: ['ppo', 'tisLevel'],
    kind: 'string',
    help: 'with --off-policy tis: token (default, one weight per token) | sequence (one per segment)',
  },
  {
    flag: 'max-staleness',
    path: ['maxStaleness'],
    kind: 'int',
    help: 'S: sample later iterations while one trains, no trained segment more than S policy versions old (default 0: the synchronous loop); docs/async.md',
  },
  { flag: 'policy-lr', path: ['optim', 'policyLr'], kind: 'number', help: 'policy learning rate' },
  { flag: 'critic-lr', path: ['optim', 'criticLr'], kind: 'number', help: 'critic learning rate' },
];
