/**
 * A job a worker will not run, or a result the trainer will not take, because it cannot be
 * trusted (docs/distributed.md, "Who chooses what a worker runs"): a missing or wrong signature,
 * a task folder outside the worker's root, an engine the worker may not reach. Unlike a job that
 * merely cannot run here (JobRejected), a refusal means the trainer and its workers disagree on
 * their secret or their bounds, or someone else writes to the queue: the trainer stops with the
 * refused jobs named instead of training on what is left.
 */
export class JobRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobRefused';
  }
}

/** How a refusal reads in a failed job's reason (BullMQ's failedReason), so the trainer can tell it from a failure. */
const PREFIX = 'refused: ';

export function refusalReason(why: string): string {
  return `${PREFIX}${why}`;
}

/** What was refused, when `reason` is a refusal; null for any other failure. */
export function refusedWhy(reason: string): string | null {
  return reason.startsWith(PREFIX) ? reason.slice(PREFIX.length) : null;
}
