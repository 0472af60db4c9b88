import type { ProgressReporter } from '../runs/progress.ts';

/** A progress reporter that stops a run (as a crash would) right after iteration `at` logged its metrics. */
export function crashAfter(at: number): ProgressReporter {
  return {
    start: () => undefined,
    stop: () => undefined,
    update: ({ iteration }) => {
      if (iteration === at) throw new Error('simulated crash');
    },
  };
}
