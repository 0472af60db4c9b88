import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { llamaCppPolicyPath } from '../adapters/llamacpp-sampler.ts';
import { z } from 'zod';
import { formatConfigIssues } from '../config/config-error.ts';
import { evaluatePolicy } from '../experiments/evaluate/evaluate-policy.ts';
import { checkPolicy } from '../experiments/evaluate/policy-source.ts';
import { readRunConfig } from '../experiments/runs/run-dir.ts';
import { RUN_FILES } from '../report/run-files.ts';
import { AGENT_FORMAT_HELP, AGENT_FORMATS, THINKING_HELP } from './run-flags.ts';
import { CliError } from './errors.ts';
import { FORCE_HELP, prepareOutputFile } from './outputs.ts';
import { parseKnobsFlag } from './json-flag.ts';
import { checkTask } from './load-envs.ts';
import { checkHarborExpert, checkHarborWriter, isHarborEnv } from './harbor-run.ts';
import { parseSummaryWriter } from './run-flags.ts';

const int = (min: number) => z.coerce.number().int().min(min);
/** Largest K of --windows: far beyond any horizon evaluated, and a bound on the episode's length. */
const MAX_EVAL_WINDOWS = 1024;

const EvalFlagsSchema = z
  .object({
    policy: z.string().min(1),
    env: z.string().min(1),
    variant: z.string().min(1).default('default'),
    knobs: z.string().optional(),
    summaryWriter: z.string().min(1).default('self'),
    system: z.string().min(1).optional(),
    tasks: int(1).optional(),
    samples: int(1).default(4),
    windows: z
      .string()
      .regex(/^\d+(,\d+)*$/, 'a comma-separated list of K, e.g. 1,4')
      .refine((w) => w.split(',').every((k) => Number(k) >= 1 && Number(k) <= MAX_EVAL_WINDOWS), {
        error: `each K must be from 1 to ${MAX_EVAL_WINDOWS} (context windows per episode)`,
      })
      .default('1,4'),
    trainingWindows: int(1).optional(),
    context: int(8).optional(),
    threshold: int(1).optional(),
    agentFormat: z.enum(AGENT_FORMATS).default('text'),
    thinking: z.enum(['on', 'off']).default('off'),
    tail: int(0).optional(),
    seed: int(0).default(0),
    out: z.string().min(1).optional(),
    tokenizer: z.string().min(1).optional(),
  })
  .strict();

/**
 * Where a result goes without --out: <policy dir>/eval/… for a checkpoint or run directory, and
 * <dir of FILE>/eval/<FILE stem>-… for llamacpp:FILE.gguf.
 */
function defaultOut(f: { policy: string; env: string; variant: string; summaryWriter: string }): string {
  const name = (prefix: string) =>
    `${prefix}${f.env}-${f.variant}-${f.summaryWriter}.json`.replace(/[^a-zA-Z0-9_.-]/g, '_');
  const gguf = llamaCppPolicyPath(f.policy);
  if (gguf) return join(dirname(gguf), 'eval', name(`${basename(gguf, '.gguf')}-`));
  return join(f.policy, 'eval', name(''));
}

export function registerEvalCommand(program: Command): void {
  program
    .command('eval')
    .description('Pass@1 with 95% intervals in x1 and xK modes at the same C, optionally with another summary writer')
    .requiredOption(
      '--policy <expert|dir|engine:url|llamacpp:file>',
      'acting policy: "expert", a checkpoint directory, a run directory (latest checkpoint), a remote engine: vllm:URL or sglang:URL, or a GGUF file run by llama.cpp: llamacpp:FILE.gguf',
    )
    .requiredOption('--env <name>', 'task family, or harbor:PATH (a Harbor task folder or a folder of them)')
    .option('--variant <name>', 'held-out variant of the family, or "default"')
    .option('--knobs <json>', 'task knob overrides as JSON (the variant applies on top)')
    .option(
      '--summary-writer <w>',
      'self | oracle | null | lossy:P | lossy:P:G (G: goal-drop probability, default P/2) | checkpoint:PATH | llamacpp:FILE.gguf (acting policy unchanged)',
    )
    .option(
      '--system <label>',
      'system name recorded in the result (default: the system in the run\'s config.json, e.g. "base" after crl sft; "policy" for a bare checkpoint or engine)',
    )
    .option('--tasks <n>', 'evaluation tasks (eval seeds; default 16, for task folders one per folder)')
    .option('--samples <n>', 'samples per task (at least 4 for a meaningful interval)')
    .option('--windows <list>', 'modes as K values, e.g. 1,4,8')
    .option('--training-windows <K>', 'K used in training (marks longer-horizon modes)')
    .option('--context <C>', 'context window C')
    .option('--threshold <T>', 'compaction threshold T_comp')
    .option('--tail <k>', 'tail steps k')
    .option('--agent-format <format>', AGENT_FORMAT_HELP, 'text')
    .option('--thinking <on|off>', THINKING_HELP, 'off')
    .option('--seed <s>', 'sampling seed')
    .option(
      '--tokenizer <name|dir>',
      "word (the built-in vocabulary) | qwen3 | a directory with tokenizer.json (+ tokenizer_config.json / chat_template.jinja); default: the checkpoint's own, else word",
    )
    .option('--out <file.json>', 'result file (default <policy run>/eval/<env>-<variant>-<writer>.json)')
    .option('--force', FORCE_HELP)
    .option(
      '--no-tensorboard',
      'write no TensorBoard event file (default: one in the policy run directory, else beside --out; docs/tensorboard.md)',
    )
    .action(async ({ force, tensorboard, ...raw }: Record<string, unknown>) => {
      const r = EvalFlagsSchema.safeParse(raw);
      if (!r.success)
        throw new CliError(
          formatConfigIssues(r.error.issues)
            .map((l) => `--${l.replace(/^([a-zA-Z]+)/, (k) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`))}`)
            .join('\n'),
        );
      const f = r.data;
      const rollout: Record<string, unknown> = {};
      if (f.context !== undefined) rollout.contextWindow = f.context;
      if (f.threshold !== undefined) rollout.compactThreshold = f.threshold;
      if (f.tail !== undefined) rollout.tailSteps = f.tail;
      // Only a non-default format is written, so a text evaluation's request record is unchanged.
      if (f.agentFormat !== 'text') rollout.agentFormat = f.agentFormat;
      if (f.thinking === 'on') rollout.thinking = true;
      // Every input is checked before the evaluation starts and before --out is touched.
      const knobs = parseKnobsFlag(f.knobs);
      const family = checkTask({ env: f.env, knobs, variant: f.variant });
      const writer = parseSummaryWriter(f.summaryWriter);
      if (isHarborEnv(f.env)) checkHarborWriter(writer);
      if (f.policy === 'expert') checkHarborExpert({ env: f.env, knobs, flag: '--policy' });
      checkPolicy({ policy: f.policy, flag: '--policy' });
      if (writer.kind === 'checkpoint') checkPolicy({ policy: writer.path, flag: '--summary-writer' });
      const remote = /^(vllm|sglang):/.test(f.policy);
      if (!f.out && (f.policy === 'expert' || remote))
        throw new CliError(`--out is required when --policy is ${remote ? 'a remote engine' : '"expert"'}`);
      const out = f.out ?? defaultOut(f);
      prepareOutputFile({ path: out, force: force === true });
      const result = await evaluatePolicy({
        system: f.system ?? defaultSystem(f.policy),
        policy: f.policy,
        env: f.env,
        variant: f.variant,
        summaryWriter: f.summaryWriter,
        rollout,
        knobs,
        // A task set is evaluated task by task: every folder once per sample unless --tasks says otherwise.
        tasks: f.tasks ?? (isHarborEnv(f.env) ? family.evalSeeds.end - family.evalSeeds.start : 16),
        samplesPerTask: f.samples,
        windows: f.windows.split(',').map(Number),
        trainingWindows: f.trainingWindows ?? null,
        seed: f.seed,
        out,
        ...(f.tokenizer ? { tokenizer: f.tokenizer } : {}),
        ...(tensorboard === false ? { tensorboard: false } : {}),
      });
      const modes = Object.fromEntries(
        Object.entries(result.modes).map(([m, v]) => [m, { passAt1: v.passAt1, low: v.low, high: v.high }]),
      );
      process.stdout.write(
        `${JSON.stringify({ out, system: result.system, env: result.env, variant: result.variant, summaryWriter: result.summaryWriter, modes })}\n`,
      );
    });
}

/**
 * The system a result is recorded under when --system is absent: the run's own (config.json's
 * "system", e.g. "base" for `crl sft`), found from a run directory or one of its checkpoints, so
 * `crl sft` -> `crl eval` -> `crl report` fills the report's rows; "expert" for the expert;
 * "policy" for anything else (a bare checkpoint, a remote engine).
 */
export function defaultSystem(policy: string): string {
  if (policy === 'expert') return 'expert';
  const dir = resolve(policy);
  // <run>, <run>/checkpoints/iter-N
  for (const candidate of [dir, dirname(dirname(dir))]) {
    if (!existsSync(join(candidate, RUN_FILES.config))) continue;
    try {
      return readRunConfig(candidate).system;
    } catch {
      return 'policy';
    }
  }
  return 'policy';
}
