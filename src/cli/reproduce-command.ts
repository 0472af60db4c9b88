import { z } from 'zod';
import { withAgentFormat } from '../experiments/reproduce/preset-agent-format.ts';
import { AGENT_FORMAT_HELP, AGENT_FORMATS, THINKING_HELP } from './run-flags.ts';
import { ADMIN_TOKEN_ENV } from '../adapters/engine-weights.ts';
import type { Command } from 'commander';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { withTokenizer } from '../experiments/reproduce/preset-tokenizer.ts';
import { withLora } from '../experiments/reproduce/preset-lora.ts';
import { RL_SYSTEMS } from '../experiments/reproduce/systems.ts';
import { getPreset, presetNames } from '../experiments/reproduce/presets.ts';
import type { Preset } from '../experiments/reproduce/preset-types.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { reproduce } from '../experiments/reproduce/reproduce.ts';
import { newRunName } from '../experiments/runs/run-dir.ts';
import type { ActorKind } from '../experiments/train/trainer-models.ts';
import { RUN_FILES } from '../report/run-files.ts';
import { CliError } from './errors.ts';
import { actorOption, asUserError } from './train-command.ts';

/**
 * --envs / --seeds / --systems: a part of a preset (e.g. one family of `full`), or its RL systems
 * replaced by any registered ones (e.g. `--systems compaction-rl,full-trajectory-gae` on the
 * terminal preset), recorded in pipeline.json so that --resume keeps it.
 */
export function restrictPreset(preset: Preset, opts: { envs?: string; seeds?: string; systems?: string }): Preset {
  const list = (x: string) =>
    x
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  let { envs, seeds, systems } = preset;
  if (opts.envs !== undefined) {
    envs = list(opts.envs);
    const unknown = envs.filter((e) => !preset.envs.includes(e));
    if (envs.length === 0 || unknown.length > 0)
      throw new CliError(
        `--envs: ${unknown.length ? `not in this preset: ${unknown.join(', ')}` : 'empty'}; the preset's families: ${preset.envs.join(', ')}`,
      );
  }
  if (opts.seeds !== undefined) {
    seeds = list(opts.seeds).map(Number);
    if (seeds.length === 0 || seeds.some((s) => !Number.isInteger(s) || s < 0))
      throw new CliError(`--seeds: expected comma-separated whole numbers >= 0, got ${JSON.stringify(opts.seeds)}`);
  }
  if (opts.systems !== undefined) {
    const named = [...new Set(list(opts.systems))];
    const unknown = named.filter((s) => !(RL_SYSTEMS as readonly string[]).includes(s));
    if (named.length === 0 || unknown.length > 0)
      throw new CliError(
        `--systems: ${unknown.length ? `unknown: ${unknown.join(', ')}` : 'empty'}; the RL systems: ${RL_SYSTEMS.join(', ')} (the SFT base always runs)`,
      );
    systems = named as Preset['systems'];
  }
  return { ...preset, envs, seeds, systems };
}

const AgentFlagsSchema = z.object({ format: z.enum(AGENT_FORMATS), thinking: z.enum(['on', 'off']) });

export function registerReproduceCommand(program: Command): void {
  program
    .command('reproduce')
    .description(
      'SFT base -> RL w/o compaction -> CompactionRL -> ablations -> broadcast -> eval all -> report; last line is the results JSON',
    )
    .option('--preset <name>', `one of ${presetNames().join(', ')}`, 'quick')
    .option('--out <dir>', 'pipeline directory (default runs/reproduce-<preset>-<time>)')
    .option('--envs <list>', "run only these of the preset's task families, comma-separated (e.g. kv-ledger)")
    .option('--seeds <list>', "run only these seeds instead of the preset's, comma-separated (e.g. 0,1)")
    .option(
      '--systems <list>',
      "train and evaluate these RL systems instead of the preset's, comma-separated (e.g. compaction-rl,full-trajectory-gae; docs/credit.md)",
    )
    .option(
      '--resume <dir>',
      'continue an interrupted pipeline (its stored preset, --envs, --seeds, --systems and --tokenizer)',
    )
    .option(
      '--tokenizer <name|dir>',
      "word (default) | qwen3 | a directory with tokenizer.json: the whole pipeline in that tokenizer's ids and chat format (for a subword tokenizer: the preset's token counts scaled 1.8x, kv-ledger values written as words)",
    )
    .option('--agent-format <format>', AGENT_FORMAT_HELP)
    .option('--thinking <on|off>', THINKING_HELP)
    .option(
      '--lora-rank <r>',
      'the RL systems train LoRA adapters of rank r on the SFT base instead of every weight (the base itself is a full fine-tune; docs/lora.md)',
    )
    .option('--lora-alpha <a>', 'with --lora-rank: the update is scaled by alpha / r (default 2 r)')
    .option(
      '--policy-lr <lr>',
      "the RL systems' policy learning rate instead of the preset's (e.g. a higher one for LoRA adapters)",
    )
    .option(
      '--allow-mixed',
      'reuse run directories and evaluations made with another config than the preset asks for (refused by default); the report marks every table they reach as mixed',
    )
    .option(
      '--engine-url <urls>',
      'the RL systems sample on these SGLang-API engines (comma-separated replicas, e.g. crl serve processes; admin token from CRL_ADMIN_TOKEN); SFT and evaluation stay in this process',
    )
    .option(
      '--queue <url>',
      'the RL systems run their episodes on rollout workers (crl worker) through this redis:// queue',
    )
    .addOption(actorOption())
    .action(
      async (opts: {
        preset: string;
        out?: string;
        resume?: string;
        envs?: string;
        seeds?: string;
        systems?: string;
        tokenizer?: string;
        agentFormat?: string;
        thinking?: string;
        loraRank?: string;
        loraAlpha?: string;
        policyLr?: string;
        actor: ActorKind;
        allowMixed?: boolean;
        engineUrl?: string;
        queue?: string;
      }) => {
        let presetName = opts.preset;
        let outDir = opts.out ?? join('runs', newRunName(`reproduce-${presetName}`));
        let preset: Preset;
        if (opts.resume) {
          const file = join(opts.resume, RUN_FILES.pipeline);
          if (!existsSync(file))
            throw new CliError(`${opts.resume} is not a reproduce directory (no ${RUN_FILES.pipeline})`);
          if (
            opts.envs ||
            opts.seeds ||
            opts.systems ||
            opts.tokenizer ||
            opts.agentFormat ||
            opts.thinking ||
            opts.loraRank ||
            opts.loraAlpha ||
            opts.policyLr
          )
            throw new CliError(
              '--resume continues the stored pipeline; --envs, --seeds, --systems, --tokenizer, --agent-format, --thinking, --lora-* and --policy-lr cannot change it',
            );
          // The stored preset, as it was run (a later code change to the preset does not leak in).
          const {
            preset: name,
            actor: _actor,
            invocations: _invocations,
            mixed: _mixed,
            ...stored
          } = JSON.parse(readFileSync(file, 'utf8')) as Preset & {
            preset: string;
            actor: string;
            invocations?: unknown;
            mixed?: unknown;
          };
          presetName = name;
          preset = stored;
          outDir = opts.resume;
        } else {
          if (opts.out) checkPipelineOut(opts.out);
          preset = restrictPreset(
            asUserError(() => getPreset(presetName)),
            opts,
          );
          if (opts.tokenizer) {
            const t = asUserError(() => loadTokenizer(opts.tokenizer)); // a bad name fails now, not after SFT
            preset = withTokenizer(preset, t.name);
          }
          if (opts.agentFormat || opts.thinking) {
            const format = AgentFlagsSchema.safeParse({
              format: opts.agentFormat ?? 'text',
              thinking: opts.thinking ?? 'off',
            });
            if (!format.success)
              throw new CliError('--agent-format: expected text or tools; --thinking: expected on or off');
            const f = format.data;
            preset = asUserError(() => withAgentFormat(preset, f.format, f.thinking === 'on'));
          }
          if (opts.loraRank !== undefined || opts.loraAlpha !== undefined) preset = withLoraFlags(preset, opts);
          if (opts.policyLr !== undefined) preset = withPolicyLr(preset, opts.policyLr);
        }
        if (opts.actor === 'expert')
          process.stderr.write(
            'crl: warning: --actor expert: every system acts with the scripted expert; the numbers measure the expert, not trained policies\n',
          );
        const summary = await reproduce({
          preset,
          presetName,
          outDir,
          actor: opts.actor,
          allowMixed: opts.allowMixed ?? false,
          deployment: {
            ...(opts.engineUrl ? { engineUrl: opts.engineUrl } : {}),
            ...(opts.queue ? { queueUrl: opts.queue } : {}),
            ...(process.env[ADMIN_TOKEN_ENV] ? { engineToken: process.env[ADMIN_TOKEN_ENV] } : {}),
          },
          log: (l) => process.stderr.write(`crl reproduce: ${l}\n`),
        });
        process.stdout.write(`${JSON.stringify(summary)}\n`);
      },
    );
}

const LoraFlagsSchema = z.object({
  rank: z.coerce.number().int().positive(),
  alpha: z.coerce.number().positive().optional(),
});

function withLoraFlags(preset: Preset, opts: { loraRank?: string; loraAlpha?: string }): Preset {
  if (opts.loraRank === undefined) throw new CliError('--lora-alpha needs --lora-rank');
  const flags = LoraFlagsSchema.safeParse({ rank: opts.loraRank, alpha: opts.loraAlpha });
  if (!flags.success)
    throw new CliError(
      `--lora-rank: expected a whole number >= 1, --lora-alpha a number > 0; got ${opts.loraRank}${opts.loraAlpha === undefined ? '' : ` and ${opts.loraAlpha}`}`,
    );
  return withLora(preset, flags.data);
}

function withPolicyLr(preset: Preset, given: string): Preset {
  const lr = z.coerce.number().positive().finite().safeParse(given);
  if (!lr.success) throw new CliError(`--policy-lr: expected a number > 0, got ${given}`);
  return { ...preset, train: { ...preset.train, optim: { ...preset.train.optim, policyLr: lr.data } } };
}

/**
 * A pipeline's --out: new, empty, or an earlier pipeline of crl reproduce (continued, its runs
 * checked against the preset); any other directory (a run, a home directory) is refused.
 */
function checkPipelineOut(dir: string): void {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new CliError(`--out ${dir} is a file; name a directory`);
    entries = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (entries.length > 0 && !entries.includes(RUN_FILES.pipeline))
    throw new CliError(
      `--out ${dir} exists and is not a crl reproduce directory (no ${RUN_FILES.pipeline}); choose a new or empty directory`,
    );
}
