import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { FAULT_KINDS } from '../contracts/index.ts';
import { ProvenanceSchema } from '../util/provenance.ts';

/**
 * The evaluation result file (one per system x env x variant x summary writer), the boundary
 * between `crl eval` and `crl report`, so it is parsed with zod on both sides.
 */

export const ModeResultSchema = z
  .object({
    /** K used in this mode (x1: 1, x4: 4, ...); C is the file's contextWindow for every mode. */
    windows: z.number().int().positive(),
    passAt1: z.number().min(0).max(1),
    low: z.number().min(0).max(1),
    high: z.number().min(0).max(1),
    tasks: z.number().int().positive(),
    samples: z.number().int().positive(),
    effectiveSamples: z.number().positive(),
    meanCompactions: z.number().nonnegative(),
    truncatedRate: z.number().min(0).max(1),
    meanGeneratedTokens: z.number().nonnegative(),
    /**
     * Episodes that ended in a fault, by kind (docs/faults.md): failures in passAt1, counted here
     * apart. Absent in older files.
     */
    faults: z.record(z.enum(FAULT_KINDS), z.number().int().nonnegative()).optional(),
    /** Per-task mean success, in taskSeeds order. */
    perTask: z.array(z.number().min(0).max(1)),
  })
  .strict();
export type ModeResult = z.infer<typeof ModeResultSchema>;

export const EvalResultSchema = z
  .object({
    kind: z.literal('crl-eval'),
    version: z.literal(1),
    /** System name (method §7), e.g. 'base', 'compaction-rl'. */
    system: z.string().min(1),
    /** Acting policy: a checkpoint path or 'expert'. */
    policy: z.string().min(1),
    env: z.string().min(1),
    /** 'default' or a held-out variant name. */
    variant: z.string().min(1),
    /** 'self' | 'oracle' | 'null' | 'lossy:P' | 'checkpoint:PATH' (src/eval/summary-writer.ts). */
    summaryWriter: z.string().min(1),
    contextWindow: z.number().int().positive(),
    samplesPerTask: z.number().int().positive(),
    taskSeeds: z.array(z.number().int()),
    /** K the policy was trained with, when known: modes with more windows are "longer horizon". */
    trainingWindows: z.number().int().positive().nullable(),
    /** Keyed 'x1', 'x4', ... */
    modes: z.record(z.string().regex(/^x\d+$/), ModeResultSchema),
    /**
     * The sampling seed. `crl reproduce` uses the training seed, so evaluations of different systems
     * with the same (env, seed) are paired (src/report/statistics.ts). Absent in older files.
     */
    seed: z.number().int().optional(),
    /** The settings this evaluation was made with, paths relative to the pipeline directory. */
    request: z.record(z.string(), z.unknown()).optional(),
    /** Commit, command line and hash of `request` (src/util/provenance.ts). Absent in older files. */
    provenance: ProvenanceSchema.optional(),
  })
  .strict();
export type EvalResult = z.infer<typeof EvalResultSchema>;

/**
 * The C an evaluation was asked for (its request), else the one it ran at. The tools format grows
 * a window by the format's cost (rollout/agent-format/tools-sizing.ts), per family, so evaluations
 * asked at one C run at another; tables compare systems at the C they were asked for.
 */
export function askedContextWindow(e: EvalResult): number {
  const rollout = e.request?.['rollout'];
  const asked =
    typeof rollout === 'object' && rollout !== null ? (rollout as Record<string, unknown>)['contextWindow'] : undefined;
  return typeof asked === 'number' ? asked : e.contextWindow;
}

/** Reads and validates an eval file; throws an error naming the file and the first problems. */
export function readEvalResult(path: string): EvalResult {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  const r = EvalResultSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`);
    throw new Error(`${path} is not a valid eval result:\n  ${lines.join('\n  ')}`);
  }
  return r.data;
}

export function modeName(windows: number): string {
  return `x${windows}`;
}
