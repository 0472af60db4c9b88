import type { Command } from 'commander';
import { basename } from 'node:path';
import { z } from 'zod';
import { ENGINE_PROTOCOLS } from '../adapters/engine-protocols.ts';
import { startSamplerServer } from '../adapters/sampler-server.ts';
import { loadPolicyDir } from '../model/load-policy.ts';
import { ModelSampler } from '../model/sampler.ts';
import { checkTokenizer, tokenizerForCheckpoint } from '../model/tokenizer-match.ts';
import { resolveCheckpointDir } from '../experiments/policy-source.ts';
import { mixSeed, Rng } from '../util/random.ts';
import { CliError } from './errors.ts';

const ServeFlags = z.object({
  policy: z.string().min(1),
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  model: z.string().min(1).optional(),
  seed: z.coerce.number().int(),
  tokenizer: z.string().min(1).optional(),
});

/** The first stdout line of `crl serve`, once it listens (scripts and tests wait for it). */
export interface ServeReady {
  url: string;
  model: string;
  protocols: Record<string, string>;
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'serve an embedded checkpoint over the vLLM (/v1/completions) and SGLang (/generate, /update_weights_from_disk) token-id APIs',
    )
    .requiredOption('--policy <dir>', 'a checkpoint directory, or a run directory (its latest checkpoint)')
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0: any free port; the first stdout line says which)', '8000')
    .option('--model <name>', 'model name reported by /v1/models (default: the directory name)')
    .option('--seed <s>', 'sampling seed', '0')
    .option('--tokenizer <name|dir>', "the checkpoint's tokenizer (default: its own; another one is refused)")
    .action(async (opts: Record<string, unknown>) => {
      const r = ServeFlags.safeParse(opts);
      if (!r.success) throw new CliError(r.error.issues.map((i) => `--${String(i.path[0])}: ${i.message}`).join('\n'));
      const f = r.data;
      let policy;
      try {
        policy = (await loadPolicyDir(resolveCheckpointDir(f.policy))).policy;
      } catch (e) {
        throw new CliError(`--policy: ${(e as Error).message}`);
      }
      // Requests and responses speak the tokenizer's real ids (a trimmed model maps them, docs/decisions/0013).
      const tokenizer = tokenizerForCheckpoint({
        what: `checkpoint ${f.policy}`,
        ref: policy.vocab.tokenizer,
        given: f.tokenizer,
      });
      const sampler = new ModelSampler({ policy, rng: new Rng(mixSeed(f.seed, 3)) });
      // SGLang's update_weights_from_disk: the trainer publishes each update (crl train --engine-url).
      const loadWeights = async (path: string) => {
        const next = (await loadPolicyDir(resolveCheckpointDir(path))).policy;
        if (next.net.params.length !== policy.net.params.length)
          throw new Error(
            `${path} holds ${next.net.params.length} parameters, the served model ${policy.net.params.length}`,
          );
        checkTokenizer({ what: path, ref: next.vocab.tokenizer, tokenizer });
        if (JSON.stringify(next.vocab.ids) !== JSON.stringify(policy.vocab.ids))
          throw new Error(`${path} has another trimmed vocabulary than the served model`);
        policy.net.params.set(next.net.params);
        policy.net.markWeightsChanged(); // drops the sampler's KV cache
      };
      const model = f.model ?? basename(f.policy);
      let server;
      try {
        server = await startSamplerServer({
          sampler,
          host: f.host,
          port: f.port,
          model,
          vocabSize: tokenizer.tokenizer.vocabSize,
          loadWeights,
        });
      } catch (e) {
        throw new CliError(`cannot listen on ${f.host}:${f.port}: ${(e as Error).message}`);
      }
      const ready: ServeReady = {
        url: server.url,
        model,
        protocols: Object.fromEntries(Object.entries(ENGINE_PROTOCOLS).map(([k, p]) => [k, p.path])),
      };
      process.stdout.write(`${JSON.stringify(ready)}\n`);
      process.stderr.write(
        `crl serve: ${model} at ${server.url} (vllm ${ready.protocols.vllm}, sglang ${ready.protocols.sglang}); Ctrl-C stops\n`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => void server.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
