import type { Command } from 'commander';
import { basename } from 'node:path';
import { z } from 'zod';
import { ENGINE_PROTOCOLS } from '../adapters/engine-protocols.ts';
import { ADMIN_TOKEN_ENV, UPDATE_WEIGHTS_PATH } from '../adapters/engine-weights.ts';
import { isLoopback } from '../adapters/http-guard.ts';
import { startSamplerServer } from '../adapters/sampler-server.ts';
import { loadPolicyDir } from '../model/load-policy.ts';
import { ModelSampler } from '../model/sampler.ts';
import { tokenizerForCheckpoint } from '../model/tokenizer-match.ts';
import { topLogprobs } from '../model/top-logprobs.ts';
import { resolveCheckpointDir } from '../experiments/policy-source.ts';
import { mixSeed, Rng } from '../util/random.ts';
import { CliError } from './errors.ts';
import { loadServedWeights, weightRoots } from './serve-weights.ts';

const int = (min: number, max: number) =>
  z.coerce
    .number({ error: 'expected a whole number' })
    .int({ error: 'expected a whole number' })
    .min(min, { error: `must be ${min} or more` })
    .max(max, { error: `must be ${max} or less` });

const ServeFlags = z.object({
  policy: z.string().min(1),
  host: z.string().min(1),
  port: int(0, 65535),
  model: z.string().min(1).optional(),
  seed: int(0, Number.MAX_SAFE_INTEGER),
  adminToken: z.string().min(1, { error: 'must not be empty' }).optional(),
  weightsDir: z.array(z.string().min(1)).default([]),
  allowHost: z.array(z.string().min(1)).default([]),
  maxConcurrent: int(1, 4096).default(32),
  tokenizer: z.string().min(1).optional(),
});

/** The first stdout line of `crl serve`, once it listens (scripts and tests wait for it). */
export interface ServeReady {
  url: string;
  model: string;
  protocols: Record<string, string>;
}

/** Below this an admin token is called out as guessable (16 hex digits are 64 bits). */
const MIN_TOKEN_LENGTH = 16;

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'serve an embedded checkpoint over the OpenAI/vLLM /v1/completions and SGLang /generate APIs, and load new weights through /update_weights_from_disk (admin token)',
    )
    .requiredOption('--policy <dir>', 'a checkpoint directory, or a run directory (its latest checkpoint)')
    .option(
      '--host <addr>',
      'address to listen on (a non-loopback address is reachable from other machines)',
      '127.0.0.1',
    )
    .option('--port <n>', 'port (0: any free port; the first stdout line says which)', '8000')
    .option(
      '--model <name>',
      'model name served (/v1/models); requests naming another model get 404 (default: the directory name)',
    )
    .option('--seed <s>', 'sampling seed', '0')
    .option(
      '--admin-token <token>',
      `enables ${UPDATE_WEIGHTS_PATH}: requests must send "Authorization: Bearer <token>" (better: set ${ADMIN_TOKEN_ENV}, which other users cannot read from the process list); without a token the endpoint is disabled`,
    )
    .option('--weights-dir <dir>', `a directory ${UPDATE_WEIGHTS_PATH} may load checkpoints from (repeatable)`, collect)
    .option(
      '--allow-host <name>',
      'a host name clients may use besides the bound address and localhost (repeatable)',
      collect,
    )
    .option('--max-concurrent <n>', 'requests served at once; more get 503 (default 32)')
    .option('--tokenizer <name|dir>', "the checkpoint's tokenizer (default: its own; another one is refused)")
    .action(async (opts: Record<string, unknown>) => {
      const r = ServeFlags.safeParse({ ...opts, adminToken: opts.adminToken ?? process.env[ADMIN_TOKEN_ENV] });
      if (!r.success)
        throw new CliError(
          r.error.issues
            .map((i) => `--${String(i.path[0]).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${i.message}`)
            .join('\n'),
        );
      const f = r.data;
      if (f.adminToken && f.weightsDir.length === 0)
        throw new CliError(
          `an admin token enables ${UPDATE_WEIGHTS_PATH}, which loads only from the directories named with --weights-dir; name at least one`,
        );
      const roots = weightRoots(f.weightsDir);
      let policy;
      try {
        policy = (await loadPolicyDir(resolveCheckpointDir(f.policy))).policy;
      } catch (e) {
        throw new CliError(`--policy: ${(e as Error).message}`);
      }
      // Requests and responses speak the tokenizer's real ids (a trimmed model maps them, docs/decisions/0013).
      const loaded = tokenizerForCheckpoint({
        what: `checkpoint ${f.policy}`,
        ref: policy.vocab.tokenizer,
        given: f.tokenizer,
      });
      const { tokenizer } = loaded;
      if (!policy.net.params.every(Number.isFinite))
        throw new CliError(
          `--policy ${f.policy} holds non-finite weights (NaN or infinity); serve an earlier checkpoint`,
        );
      const served = policy;
      const sampler = new ModelSampler({ policy, rng: new Rng(mixSeed(f.seed, 3)) });
      const model = f.model ?? basename(f.policy);
      const log = (l: string) => process.stderr.write(`${l}\n`);
      let server;
      try {
        server = await startSamplerServer({
          sampler,
          tokenizer,
          vocabSize: tokenizer.vocabSize,
          maxModelLen: policy.config.maxSeqLen,
          host: f.host,
          port: f.port,
          model,
          score: (seq, from, k) => topLogprobs({ policy: served, seq, from, k }),
          ...(f.adminToken
            ? {
                admin: {
                  token: f.adminToken,
                  loadWeights: (path: string) =>
                    loadServedWeights({ policy: served, tokenizer: loaded, roots, requested: path }),
                },
              }
            : {}),
          allowHosts: f.allowHost,
          limits: { concurrent: f.maxConcurrent },
          log,
        });
      } catch (e) {
        throw new CliError(`cannot listen on ${f.host}:${f.port}: ${(e as Error).message}`);
      }
      const ready: ServeReady = {
        url: server.url,
        model,
        protocols: Object.fromEntries(Object.entries(ENGINE_PROTOCOLS).map(([k, p]) => [k, p.path])),
      };
      if (!isLoopback(f.host))
        log(
          `crl: warning: listening on ${f.host}, reachable from other machines: anyone who can connect can sample from this model; use --host 127.0.0.1 unless that is what you want`,
        );
      if (f.adminToken && opts.adminToken !== undefined)
        log(
          `crl: warning: --admin-token is visible to other users of this machine in the process list; set ${ADMIN_TOKEN_ENV} instead`,
        );
      if (f.adminToken && f.adminToken.length < MIN_TOKEN_LENGTH)
        log(
          `crl: warning: the admin token has ${f.adminToken.length} characters, short enough to guess; use at least ${MIN_TOKEN_LENGTH} random ones (openssl rand -hex 16)`,
        );
      if (!f.adminToken && roots.length > 0)
        log(
          `crl: warning: --weights-dir without an admin token: ${UPDATE_WEIGHTS_PATH} stays disabled (set ${ADMIN_TOKEN_ENV} or --admin-token)`,
        );
      // Warnings first: whoever waits for the ready line has them by then.
      process.stdout.write(`${JSON.stringify(ready)}\n`);
      log(
        `crl serve: ${model} at ${server.url} (vllm ${ready.protocols.vllm}, sglang ${ready.protocols.sglang}; weight loading ${f.adminToken ? `enabled from ${roots.join(', ')}` : 'disabled'}); Ctrl-C stops`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => void server.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
