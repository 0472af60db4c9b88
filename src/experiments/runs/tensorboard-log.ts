import { readFileSync } from 'node:fs';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { eventFilesIn, EventFileWriter } from '../../util/tfevents/event-file.ts';
import { decodeEvent, type EventValue, type Histogram } from '../../util/tfevents/event-proto.ts';
import { frameRecord, unframeRecords } from '../../util/tfevents/tfrecord.ts';

/**
 * The run's TensorBoard log (docs/tensorboard.md): per iteration, every finite number of its
 * metrics.jsonl and timing.jsonl lines as a scalar under the same name, step = the iteration, the
 * sampled episodes as text and the iteration's histograms, in one write. Each process writes a file of its own, made on its
 * first iteration (a run that fails to start leaves none), so a resumed run adds a new file, as
 * TensorBoard expects of a restarted writer.
 */
export class TensorboardLog {
  private readonly writer: EventFileWriter;

  constructor(dir: string) {
    this.writer = new EventFileWriter(dir);
  }

  appendIteration(options: {
    iteration: number;
    metrics: Readonly<Record<string, number>>;
    timing: Readonly<Record<string, number>>;
    texts: ReadonlyArray<{ tag: string; text: string }>;
    histograms?: ReadonlyArray<{ tag: string; histogram: Histogram }>;
  }): void {
    const values: EventValue[] = [
      ...scalars(options.metrics),
      ...scalars(options.timing),
      ...options.texts.map((t) => ({ tag: t.tag, text: t.text })),
      ...(options.histograms ?? []).map((h) => ({ tag: h.tag, histogram: h.histogram })),
    ];
    this.writer.append([{ step: options.iteration, values }]);
  }

  /** The file this process writes, once its first iteration made it. */
  get file(): string | null {
    return this.writer.file;
  }
}

/** Finite numbers only: metrics.jsonl stores the others as null, and a chart has no point for them. */
function scalars(values: Readonly<Record<string, number>>): EventValue[] {
  return Object.keys(values)
    .sort()
    .filter((tag) => Number.isFinite(values[tag]))
    .map((tag) => ({ tag, scalar: values[tag]! }));
}

/**
 * Resume step, beside truncateMetrics: cut the run's event files back to the iterations the
 * checkpoint covers, a torn last record (a writer killed mid-write) included. The iterations after
 * it are rerun and written again to the resumed process's own file, so no step is in two files.
 * An iteration's records are written before its checkpoint is saved, so those kept are whole.
 */
export function truncateTensorboard(options: { dir: string; lastIteration: number }): void {
  for (const path of eventFilesIn(options.dir)) {
    const bytes = readFileSync(path);
    const { records, tornBytes } = unframeRecords(bytes, path);
    const kept = records.filter((r) => {
      const e = decodeEvent(r);
      return e.values.length === 0 || e.step <= options.lastIteration;
    });
    if (kept.length === records.length && tornBytes === 0) continue;
    writeFileAtomic(path, Buffer.concat(kept.map(frameRecord)));
  }
}
