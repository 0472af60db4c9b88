/**
 * CLI flags that override config keys (flags win over the file). A table, not a chain of ifs:
 * the train command declares one option per row and this module maps parsed values to a nested
 * partial config that the schema then validates.
 */
export interface ConfigFlag {
  /** commander option name without dashes, kebab-case. */
  flag: string;
  /** Where the value goes in TrainConfig. */
  path: readonly string[];
  /** list: comma-separated strings. */
  kind: 'int' | 'number' | 'string' | 'boolean' | 'json' | 'list';
  help: string;
}

export const CONFIG_FLAGS: readonly ConfigFlag[] = [
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
  { flag: 'model', path: ['model', 'preset'], kind: 'string', help: 'model preset' },
  {
    flag: 'recompute',
    path: ['model', 'recompute'],
    kind: 'boolean',
    help: "true: keep only each layer's input for the backward and recompute the rest there: less memory, one more trunk forward, the same gradients (default false)",
  },
  {
    flag: 'critic-layers',
    path: ['model', 'criticLayers'],
    kind: 'int',
    help: "K: the critic is the policy's embeddings and first K layers with a value head (default: all layers); docs/engine-scale.md",
  },
  {
    flag: 'critic-embedding',
    path: ['model', 'criticEmbedding'],
    kind: 'string',
    help: "trained (default) | frozen: the critic's embedding table is not trained, and has no gradient or AdamW moments (1.9 GB less at 0.6B); docs/lora.md",
  },
  {
    flag: 'lora-rank',
    path: ['model', 'lora', 'rank'],
    kind: 'int',
    help: "r: train LoRA adapters of rank r on the policy's frozen base instead of every weight (docs/lora.md)",
  },
  {
    flag: 'lora-alpha',
    path: ['model', 'lora', 'alpha'],
    kind: 'number',
    help: 'with --lora-rank: the update is scaled by alpha / r (default 2 r)',
  },
  {
    flag: 'lora-targets',
    path: ['model', 'lora', 'targets'],
    kind: 'list',
    help: 'with --lora-rank: the projections adapted, comma-separated, of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj (default all)',
  },
  {
    flag: 'tokenizer',
    path: ['tokenizer'],
    kind: 'string',
    help: "word | qwen3 | a directory with tokenizer.json (default: --init's own, else the family's, else word)",
  },
  {
    flag: 'init',
    path: ['model', 'init'],
    kind: 'string',
    help: 'weights to start from: a checkpoint (the SFT base) or a Hugging Face model directory',
  },
  { flag: 'seed', path: ['seed'], kind: 'int', help: 'run seed' },
  { flag: 'iterations', path: ['iterations'], kind: 'int', help: 'training iterations' },
  { flag: 'checkpoint-every', path: ['checkpointEvery'], kind: 'int', help: 'checkpoint every N iterations' },
  {
    flag: 'trainer',
    path: ['trainer', 'kind'],
    kind: 'string',
    help: 'where the update runs: torch = a PyTorch trainer process (docs/torch-trainer.md); default: the embedded engine',
  },
  {
    flag: 'trainer-command',
    path: ['trainer', 'command'],
    kind: 'string',
    help: "with --trainer torch: the command that starts the trainer, split on whitespace (default '/usr/bin/python3 -m crl_torch')",
  },
  {
    flag: 'trainer-procs',
    path: ['trainer', 'procs'],
    kind: 'int',
    help: 'with --trainer torch: start this many trainer processes under torchrun, each running its share of every minibatch (data parallel; docs/torch-trainer.md)',
  },
  {
    flag: 'trainer-url',
    path: ['trainer', 'url'],
    kind: 'string',
    help: "with --trainer torch: connect to a trainer started separately at tcp://HOST:PORT ('python3 -m crl_torch --listen PORT') instead of starting one",
  },
  {
    flag: 'trainer-timeout',
    path: ['trainer', 'timeoutSec'],
    kind: 'number',
    help: 'with --trainer torch: fail when the trainer does not answer one request for this many seconds (default 600)',
  },
  {
    flag: 'engine-url',
    path: ['engine', 'url'],
    kind: 'string',
    help: "sample on remote SGLang-API engines at these URLs (comma-separated replicas, e.g. `crl serve` processes); weights are pushed to every replica each iteration, with the engines' admin token from CRL_ADMIN_TOKEN",
  },
  {
    flag: 'unversioned-ok',
    path: ['engine', 'acceptUnversioned'],
    kind: 'boolean',
    help: 'with --engine-url: also sample on replicas that report no weight version (true|false; default false: their weights cannot be checked)',
  },
  {
    flag: 'engine-logprobs',
    path: ['engine', 'logprobs'],
    kind: 'string',
    help: "with --engine-url: what the engines' log-probs are: temperature (default: SGLang's, logits / T without top-p) | sampled (the distribution drawn from, top-p included: crl serve) | raw (the model's own: SGLANG_RETURN_ORIGINAL_LOGPROB); --off-policy needs them to be the sampled distribution's (docs/remote-engines.md)",
  },
  {
    flag: 'engine-lora',
    path: ['engine', 'lora'],
    kind: 'string',
    help: "with --engine-url and --lora-rank: what each policy version pushes: auto (default: the adapter when every engine takes vLLM's /v1/load_lora_adapter, e.g. crl serve; else the merged weights) | on (the adapter only; an engine without the API stops the run) | off (the merged weights) (docs/lora.md)",
  },
  {
    flag: 'queue',
    path: ['queue', 'url'],
    kind: 'string',
    help: 'run episodes on rollout workers (crl worker) through the Redis queue at this redis:// URL; jobs are signed with CRL_QUEUE_SECRET, which the workers must share (docs/distributed.md)',
  },
  {
    flag: 'queue-timeout',
    path: ['queue', 'timeoutSec'],
    kind: 'number',
    help: 'with --queue: fail when no episode job starts or finishes for this many seconds (default 60)',
  },
  {
    flag: 'fault-retries',
    path: ['faults', 'retries'],
    kind: 'int',
    help: 'times an episode that ended in a fault (sandbox, verifier, engine) runs again on a fresh environment before it is left out of the update (default 1; docs/faults.md)',
  },
  {
    flag: 'max-faults',
    path: ['faults', 'maxFraction'],
    kind: 'number',
    help: "stop the run when more than this share (0..1) of an iteration's episodes are left out as faults (default 0.5)",
  },
  {
    flag: 'step-delay-ms',
    path: ['env', 'stepDelayMs'],
    kind: 'int',
    help: 'every environment step waits this many ms first (an I/O-bound setting for throughput measurements)',
  },
];

/** commander turns `--policy-lr` into `policyLr`. */
export function camelFlag(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Parses one flag's raw string. Bad numbers are left as strings on purpose: the schema then
 * reports them with the config path, in the same format as file errors.
 */
function parseFlagValue(kind: ConfigFlag['kind'], raw: string, flag: string): unknown {
  switch (kind) {
    case 'int':
    case 'number': {
      const n = Number(raw);
      return raw.trim() !== '' && Number.isFinite(n) ? n : raw;
    }
    case 'boolean':
      return raw === 'true' || raw === 'on' ? true : raw === 'false' || raw === 'off' ? false : raw;
    case 'list':
      return raw
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        throw new Error(`--${flag}: not valid JSON: ${raw}`);
      }
    default:
      return raw;
  }
}

/** Builds the nested override object from commander's parsed options (strings). */
export function flagsToConfig(options: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of CONFIG_FLAGS) {
    const raw = options[camelFlag(f.flag)];
    // Every config flag takes a value, which commander passes as a string.
    if (typeof raw !== 'string') continue;
    let node = out;
    f.path.slice(0, -1).forEach((k) => {
      node[k] ??= {};
      node = node[k] as Record<string, unknown>;
    });
    node[f.path[f.path.length - 1]!] = parseFlagValue(f.kind, raw, f.flag);
  }
  return out;
}

/** Deep merge of plain objects; `b` wins. Arrays and scalars are replaced, not merged. */
export function deepMerge(a: unknown, b: unknown): unknown {
  const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
  if (!isObj(a) || !isObj(b)) return b === undefined ? a : b;
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = deepMerge(a[k], v);
  return out;
}
