import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { decodeEvent, encodeEvent, FILE_VERSION, type DecodedEvent, type EventValue } from './event-proto.ts';
import { frameRecord, unframeRecords } from './tfrecord.ts';

/** TensorBoard reads every file of a directory whose name holds this; the prefix is its writers'. */
export const EVENT_FILE_PREFIX = 'events.out.tfevents.';

/**
 * The event files of a directory in the order TensorBoard reads them (by name: the 10-digit start
 * second first, so older files come first).
 */
export function eventFilesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.startsWith(EVENT_FILE_PREFIX))
    .sort()
    .map((f) => join(dir, f));
}

/** A file's whole events and the bytes of a last record cut short (a killed writer's). */
export function readEventFile(path: string): { events: DecodedEvent[]; tornBytes: number; wholeBytes: number } {
  const { records, tornBytes, wholeBytes } = unframeRecords(readFileSync(path), path);
  return { events: records.map(decodeEvent), tornBytes, wholeBytes };
}

/**
 * Appends events to one new event file, `events.out.tfevents.<seconds>.<hostname>` (the name
 * TensorBoard's writers use), made on the first append with the file-version record first. Each
 * append is one write of whole records, so a reader never sees half an append but after a crash.
 * A process that starts in the same second as an earlier writer into the same directory (a quick
 * resume) gets `.1`, `.2`, ... after the name: one writer per file, and the name order stays the
 * start order.
 */
export class EventFileWriter {
  private path: string | null = null;

  constructor(
    private readonly dir: string,
    private readonly clock: () => number = () => Date.now() / 1000,
  ) {}

  /** The file's path once the first append made it. */
  get file(): string | null {
    return this.path;
  }

  /** One event per step, with its values; all of them in one write. */
  append(steps: ReadonlyArray<{ step: number; values: EventValue[] }>): void {
    const wallTime = this.clock();
    const records: Uint8Array[] = [];
    if (this.path === null) {
      this.path = this.freshName(wallTime);
      records.push(frameRecord(encodeEvent({ wallTime, step: 0, fileVersion: FILE_VERSION })));
    }
    for (const { step, values } of steps)
      if (values.length > 0) records.push(frameRecord(encodeEvent({ wallTime, step, values })));
    appendFileSync(this.path, Buffer.concat(records), { flag: 'a' });
  }

  private freshName(wallTime: number): string {
    const base = join(this.dir, `${EVENT_FILE_PREFIX}${Math.floor(wallTime)}.${hostname()}`);
    let path = base;
    for (let n = 1; existsSync(path); n++) path = `${base}.${n}`;
    return path;
  }
}
