import { z } from 'zod';
import { parseSummaryWriter as parseWriterSpec, type SummaryWriterSpec } from '../eval/summary-writer.ts';
import { SANDBOX_CHOICES } from '../env/harbor/task-sandbox.ts';
import { HALF_PRECISION_MIN_PARAMS, PrecisionChoiceSchema } from '../model/network/weight-precision.ts';
import { CliError } from './errors.ts';

/** `--summary-writer`: who writes summaries (Table 1 analogue, method §8); one grammar, in eval/. */
export type SummaryWriterChoice = SummaryWriterSpec;

const int = (min: number) =>
  z.coerce
    .number({ error: 'expected a whole number' })
    .int({ error: 'expected a whole number' })
    .min(min, { error: `must be ${min} or more` });

export const AGENT_FORMATS = ['text', 'tools'] as const;

export const RunFlagsSchema = z
  .object({
    env: z.string().min(1),
    policy: z.string().min(1).default('expert'),
    episodes: int(1).default(8),
    windows: int(1).default(4),
    context: int(8).optional(),
    threshold: int(1).optional(),
    tail: int(0).optional(),
    seed: int(0).default(0),
    summaryWriter: z.string().default('self'),
    concurrency: int(1).optional(),
    stepDelayMs: int(0).default(0),
    maxActionTokens: int(1).optional(),
    maxObservationTokens: int(2).optional(),
    summaryMaxTokens: int(1).optional(),
    // Range messages on the checks themselves: the schema-level one would say "expected a number" for -1 too.
    temperature: z.coerce.number({ error: 'expected a number' }).min(0, { error: 'must be 0 or more' }).optional(),
    topP: z.coerce
      .number({ error: 'expected a number' })
      .gt(0, { error: 'must be above 0 and at most 1' })
      .max(1, { error: 'must be above 0 and at most 1' })
      .optional(),
    /** --agent-format: the agent's turn is the action's text, or a tool call (docs/agent-format.md). */
    agentFormat: z.enum(AGENT_FORMATS, { error: `expected one of ${AGENT_FORMATS.join(', ')}` }).default('text'),
    /** --thinking: the tools format's thinking block before each call. */
    thinking: z.enum(['on', 'off'], { error: 'expected on or off' }).default('off'),
    /** Task knobs as JSON text (validated by the family's knob schema when the env is built). */
    knobs: z.string().optional(),
    /** --tokenizer: word | qwen3 | DIR (default: the checkpoint's own, else word). */
    tokenizer: z.string().min(1).optional(),
    /** --sandbox for task folders: auto | docker | bwrap (env/harbor/task-sandbox.ts). */
    sandbox: z.enum(SANDBOX_CHOICES, { error: `expected one of ${SANDBOX_CHOICES.join(', ')}` }).default('auto'),
    /** --precision: the embedded sampler's weight matrices (model/network/weight-precision.ts). */
    precision: PrecisionChoiceSchema.default('auto'),
    out: z.string().min(1),
  })
  .strict();
export type RunFlags = z.infer<typeof RunFlagsSchema>;

/** --agent-format and --thinking's help, the same on every command that runs episodes. */
export const AGENT_FORMAT_HELP =
  "how the agent acts: text (its turn is the action) or tools (one tool call per turn in its model's own syntax, the tools declared in the system turn; needs a subword tokenizer such as qwen3)";
export const THINKING_HELP =
  "tools format: on, the agent reasons in a <think> block before each call (trained like any generated token); off, the generation prompt carries the template's empty thinking block";

/** --precision's help, the same on every command that samples with the embedded engine. */
export const PRECISION_HELP = `weight precision of an embedded model (a checkpoint or model directory) while it samples: f32, or f16 / bf16 (half the memory read per token, f32 accumulation); auto: bf16 for models of ${HALF_PRECISION_MIN_PARAMS / 1e6}M parameters or more, else f32. Training always keeps f32 weights`;

const FLAG_NAMES: Record<string, string> = {
  summaryWriter: '--summary-writer',
  topP: '--top-p',
  agentFormat: '--agent-format',
  maxActionTokens: '--max-action-tokens',
  maxObservationTokens: '--max-observation-tokens',
  summaryMaxTokens: '--summary-max-tokens',
  stepDelayMs: '--step-delay-ms',
};

/** Parses commander's raw option values; a bad value names its flag. */
export function parseRunFlags(raw: Record<string, unknown>): RunFlags & { writer: SummaryWriterChoice } {
  const r = RunFlagsSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => {
      const key = String(i.path[0] ?? '');
      const flag = FLAG_NAMES[key] ?? `--${key}`;
      return `${flag}: ${i.message}${key in raw ? ` (got ${JSON.stringify(raw[key])})` : ''}`;
    });
    throw new CliError(lines.join('\n'));
  }
  return { ...r.data, writer: parseSummaryWriter(r.data.summaryWriter) };
}

export function parseSummaryWriter(s: string): SummaryWriterChoice {
  try {
    return parseWriterSpec(s);
  } catch (e) {
    throw new CliError(`--summary-writer: ${(e as Error).message}`);
  }
}
