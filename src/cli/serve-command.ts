import type { Command } from 'commander';
import { z } from 'zod';
import { ADMIN_TOKEN_ENV, UPDATE_WEIGHTS_PATH } from '../adapters/engine-weights.ts';
import { DEFAULT_LIMITS } from '../serve/sampler-server.ts';
import { DEFAULT_MAX_LORAS } from '../serve/lora-adapters.ts';
import { LOAD_LORA_PATH } from '../adapters/engine-lora.ts';
import { serveCheckpoint, type ServedCheckpoint } from '../serve/serve-checkpoint.ts';
import { ServeError } from '../serve/serve-error.ts';
import { PrecisionChoiceSchema } from '../model/network/weight-precision.ts';
import { CliError } from './errors.ts';
import { PRECISION_HELP } from './run-flags.ts';

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
  maxConcurrent: int(1, 4096).default(DEFAULT_LIMITS.concurrent),
  maxReading: int(1, 65536).default(DEFAULT_LIMITS.reading),
  maxConnections: int(1, 65536).default(DEFAULT_LIMITS.connections),
  bodyTimeoutMs: int(1, 600_000).default(DEFAULT_LIMITS.bodyTimeoutMs),
  tokenizer: z.string().min(1).optional(),
  weightVersion: z.string().min(1).default('default'),
  precision: PrecisionChoiceSchema.default('auto'),
  maxLoras: int(1, 1024).default(DEFAULT_MAX_LORAS),
});

export type { ServeReady } from '../serve/serve-checkpoint.ts';

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'serve an embedded checkpoint over the OpenAI/vLLM /v1/completions and /v1/chat/completions (tool calls parsed in the chat template syntax) and SGLang /generate APIs, and load new weights through /update_weights_from_disk (admin token)',
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
      '--weight-version <label>',
      "the served weights' label (SGLang's weight_version: GET /get_weight_version, meta_info of every /generate answer); a weight update may set a new one",
      'default',
    )
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
    .option(
      '--max-concurrent <n>',
      `requests served at once, counted once their body has arrived; more get 503 (default ${DEFAULT_LIMITS.concurrent})`,
    )
    .option(
      '--max-reading <n>',
      `request bodies being received at once (each at most 1 MiB); more get 503 (default ${DEFAULT_LIMITS.reading})`,
    )
    .option(
      '--max-connections <n>',
      `open connections; the server closes any beyond them at once (default ${DEFAULT_LIMITS.connections})`,
    )
    .option(
      '--body-timeout-ms <ms>',
      `a request body must arrive within this many ms of its headers; a slower one gets 408 and its connection is closed (default ${DEFAULT_LIMITS.bodyTimeoutMs})`,
    )
    .option('--tokenizer <name|dir>', "the checkpoint's tokenizer (default: its own; another one is refused)")
    .option('--precision <auto|f32|f16|bf16>', PRECISION_HELP, 'auto')
    .option(
      '--max-loras <n>',
      `LoRA adapters held at once, loaded with ${LOAD_LORA_PATH} (vLLM's API; admin token, --weights-dir) and served by name; one more is refused until one is unloaded (default ${DEFAULT_MAX_LORAS})`,
    )
    .action(async (opts: Record<string, unknown>) => {
      const log = (l: string) => process.stderr.write(`${l}\n`);
      // An empty CRL_ADMIN_TOKEN (e.g. `CRL_ADMIN_TOKEN=$UNSET_VAR`) counts as unset: weight loading stays off.
      const envToken = process.env[ADMIN_TOKEN_ENV];
      if (opts.adminToken === undefined && envToken !== undefined && envToken.trim() === '')
        log(
          `crl: warning: ${ADMIN_TOKEN_ENV} is set but empty, so it is ignored and ${UPDATE_WEIGHTS_PATH} stays disabled; set it to a token (openssl rand -hex 16) or unset it`,
        );
      const adminToken = opts.adminToken ?? (envToken?.trim() ? envToken : undefined);
      const r = ServeFlags.safeParse({ ...opts, adminToken });
      if (!r.success)
        throw new CliError(
          r.error.issues
            .map((i) => `--${String(i.path[0]).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${i.message}`)
            .join('\n'),
        );
      const f = r.data;
      let served: ServedCheckpoint;
      try {
        served = await serveCheckpoint({
          policy: f.policy,
          host: f.host,
          port: f.port,
          ...(f.model ? { model: f.model } : {}),
          seed: f.seed,
          ...(f.adminToken ? { adminToken: f.adminToken } : {}),
          weightsDirs: f.weightsDir,
          allowHosts: f.allowHost,
          ...(f.tokenizer ? { tokenizer: f.tokenizer } : {}),
          weightVersion: f.weightVersion,
          precision: f.precision,
          maxLoras: f.maxLoras,
          limits: {
            concurrent: f.maxConcurrent,
            reading: f.maxReading,
            connections: f.maxConnections,
            bodyTimeoutMs: f.bodyTimeoutMs,
          },
          log,
        });
      } catch (e) {
        throw e instanceof ServeError ? new CliError(e.message) : e;
      }
      const { server, ready, roots, precision } = served;
      for (const w of served.warnings) log(`crl: warning: ${w}`);
      if (f.adminToken && opts.adminToken !== undefined)
        log(
          `crl: warning: --admin-token is visible to other users of this machine in the process list; set ${ADMIN_TOKEN_ENV} instead`,
        );
      // Warnings first: whoever waits for the ready line has them by then.
      process.stdout.write(`${JSON.stringify(ready)}\n`);
      log(
        `crl serve: ${ready.model} at ${server.url} (vllm ${ready.protocols.vllm}, sglang ${ready.protocols.sglang}; ${precision} weights; weight loading ${roots.length > 0 ? `enabled from ${roots.join(', ')}` : 'disabled'}); Ctrl-C stops`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => void server.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
