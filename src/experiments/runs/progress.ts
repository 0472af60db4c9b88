import cliProgress from 'cli-progress';

/**
 * Progress: a cli-progress bar on a TTY (iteration, chosen metrics, ETA), plain log lines
 * otherwise so logs and CI output stay readable.
 */
export interface ProgressReporter {
  start(options: { total: number; first: number }): void;
  update(options: { iteration: number; metrics: Readonly<Record<string, number>> }): void;
  stop(): void;
}

export interface ProgressField {
  key: string; // metric name
  label: string;
  digits: number;
}

/**
 * What a training run shows: success rate, compactions, tokens/s (+ ETA from the bar). `update`
 * gets the iteration's values as the loop computed them, before they are split between
 * metrics.jsonl and timing.jsonl, so the wall-clock tokens/s is among them.
 */
export const TRAIN_FIELDS: readonly ProgressField[] = [
  { key: 'rollout/success_rate', label: 'success', digits: 2 },
  { key: 'rollout/compactions_per_episode', label: 'compactions', digits: 2 },
  { key: 'perf/tokens_per_s', label: 'tok/s', digits: 0 },
];

export const SFT_FIELDS: readonly ProgressField[] = [
  { key: 'sft/loss', label: 'loss', digits: 4 },
  { key: 'sft/token_acc_p50', label: 'acc', digits: 3 },
  { key: 'sft/expert_success', label: 'expert success', digits: 2 },
];

const fmt = (x: number | undefined, d: number) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));

export function createProgress(options: {
  label: string;
  fields?: readonly ProgressField[];
  stream?: NodeJS.WriteStream;
  tty?: boolean;
}): ProgressReporter {
  const stream = options.stream ?? process.stderr;
  const fields = options.fields ?? TRAIN_FIELDS;
  const tty = options.tty ?? Boolean(stream.isTTY);
  const values = (m: Readonly<Record<string, number>>) =>
    Object.fromEntries(fields.map((f, i) => [`f${i}`, fmt(m[f.key], f.digits)]));
  if (!tty) {
    let total = 0;
    let started = Date.now();
    let first = 1;
    return {
      start: ({ total: t, first: f }) => {
        total = t;
        first = f;
        started = Date.now(); // work before start() (e.g. SFT's dense warm-up) is not in the ETA
        // A resumed run whose iterations all ran says so, instead of "starting at iteration 3 of 2".
        stream.write(
          f > t
            ? `[${options.label}] all ${t} iterations already done\n`
            : `[${options.label}] starting at iteration ${f} of ${t}\n`,
        );
      },
      update: ({ iteration, metrics }) => {
        const done = iteration - first + 1;
        const eta = ((Date.now() - started) / 1000 / done) * (total - iteration);
        const parts = fields.map((f) => `${f.label} ${fmt(metrics[f.key], f.digits)}`).join(' ');
        stream.write(`[${options.label}] it ${iteration}/${total} ${parts} eta ${eta.toFixed(0)}s\n`);
      },
      stop: () => undefined,
    };
  }
  const format = `${options.label} [{bar}] {value}/{total} | ${fields.map((f, i) => `${f.label} {f${i}}`).join(' | ')} | ETA {eta_formatted}`;
  const bar = new cliProgress.SingleBar({ stream, format, etaBuffer: 5 }, cliProgress.Presets.shades_classic);
  return {
    start: ({ total, first }) => bar.start(total, first - 1, values({})),
    update: ({ iteration, metrics }) => bar.update(iteration, values(metrics)),
    stop: () => bar.stop(),
  };
}
