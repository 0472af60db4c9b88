import type { ConfigFlag } from './config-flag.ts';

/**
 * The config flags of how a run executes (config-flags.ts): its seed, length and checkpoints, and
 * where its work runs: the trainer process, remote engines, the rollout queue, faults, step delays.
 */
export const EXECUTION_FLAGS: readonly ConfigFlag[] = [
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
