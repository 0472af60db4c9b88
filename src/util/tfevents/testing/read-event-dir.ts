import { basename } from 'node:path';
import { eventFilesIn, readEventFile } from '../event-file.ts';
import type { DecodedEvent, Histogram } from '../event-proto.ts';

/** One event file as a test reads it: every record's masked CRC32C checked on the way (tfrecord.ts). */
export interface ReadEventFile {
  name: string;
  events: DecodedEvent[];
  /** Bytes of a last record cut short (a killed writer): tolerated, reported. */
  tornBytes: number;
}

/** Every value of a directory's event files, file by file in TensorBoard's order. */
export interface EventDir {
  files: ReadEventFile[];
  scalars: Array<{ tag: string; step: number; value: number }>;
  texts: Array<{ tag: string; step: number; text: string; plugin: string | undefined }>;
  histograms: Array<{ tag: string; step: number; histogram: Histogram }>;
}

/**
 * Decodes a run directory's event files; a record whose CRC does not match throws. Each file must
 * start with the file-version record, as TensorBoard's own writers' do.
 */
export function readEventDir(dir: string): EventDir {
  const out: EventDir = { files: [], scalars: [], texts: [], histograms: [] };
  for (const path of eventFilesIn(dir)) {
    const { events, tornBytes } = readEventFile(path);
    if (events[0]?.fileVersion === undefined) throw new Error(`${path}: the first record is not the file version`);
    out.files.push({ name: basename(path), events, tornBytes });
    for (const e of events)
      for (const v of e.values) {
        if (v.scalar !== undefined) out.scalars.push({ tag: v.tag, step: e.step, value: v.scalar });
        if (v.text !== undefined) out.texts.push({ tag: v.tag, step: e.step, text: v.text, plugin: v.plugin });
        if (v.histogram !== undefined) out.histograms.push({ tag: v.tag, step: e.step, histogram: v.histogram });
      }
  }
  return out;
}
