import { dirname } from 'node:path';
import type { EvalResult } from '../../eval/eval-result.ts';
import { EventFileWriter } from '../../util/tfevents/event-file.ts';
import type { EventValue } from '../../util/tfevents/event-proto.ts';
import { latestIteration } from '../runs/checkpoint-store.ts';

/**
 * The tag prefix of one evaluation: what tells evaluations of one policy apart (env, variant,
 * summary writer, C). A writer's `checkpoint:PATH` or `lossy:P` keeps its kind and its last path
 * part, so a tag never holds a machine path.
 */
export function evalTagPrefix(r: Pick<EvalResult, 'env' | 'variant' | 'summaryWriter' | 'contextWindow'>): string {
  const writer = r.summaryWriter.replace(/^(\w+):.*\/([^/]+)$/, '$1:$2');
  const env = r.env.replace(/^.*\/([^/]+)$/, '$1'); // a task set's folder name, not its path
  return `eval/${env}-${r.variant}-${writer}-C${r.contextWindow}`.replace(/[^A-Za-z0-9_.:/-]/g, '_');
}

/** The scalars of one result: per mode (x1, xK), Pass@1 with its 95% interval and the compactions. */
export function evalScalars(r: EvalResult): EventValue[] {
  const prefix = evalTagPrefix(r);
  return Object.entries(r.modes).flatMap(([mode, m]) => [
    { tag: `${prefix}/${mode}/pass_at_1`, scalar: m.passAt1 },
    { tag: `${prefix}/${mode}/pass_at_1_low`, scalar: m.low },
    { tag: `${prefix}/${mode}/pass_at_1_high`, scalar: m.high },
    { tag: `${prefix}/${mode}/mean_compactions`, scalar: m.meanCompactions },
  ]);
}

/**
 * Writes an evaluation as TensorBoard scalars (docs/tensorboard.md). A policy that is a run
 * directory (it has checkpoints) gets them in that directory, at step = its latest checkpoint's
 * iteration, so `tensorboard --logdir` shows each system's evaluation beside its training curves
 * under the same run name; any other policy (a checkpoint, the expert, a GGUF file) next to the
 * result file, at step 0. Returns the event file written.
 */
export function writeEvalEvents(options: { result: EvalResult; policy: string; out: string }): string {
  const iteration = options.policy === 'expert' ? null : latestIteration(options.policy);
  const dir = iteration === null ? dirname(options.out) : options.policy;
  const writer = new EventFileWriter(dir);
  writer.append([{ step: iteration ?? 0, values: evalScalars(options.result) }]);
  return writer.file!;
}
