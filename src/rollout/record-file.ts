import { appendFileSync, closeSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ensureDir } from '../util/atomic-write.ts';
import { EpisodeRecordSchema, parseRecordsJsonl, type EpisodeRecord } from './record.ts';

/**
 * Episode records on disk, one JSON object per line. The writer appends each record as it ends,
 * so a long run that stops early still leaves every finished episode behind. It creates a new
 * file: an existing one is refused (EEXIST), never emptied, so the records it holds cannot be lost
 * (`crl run` writes through util/atomic-write.ts's AtomicLineWriter instead, and renames at the end).
 */
export class RecordWriter {
  constructor(readonly path: string) {
    ensureDir(dirname(path));
    closeSync(openSync(path, 'wx'));
  }

  write(record: EpisodeRecord): void {
    appendFileSync(this.path, recordLine(record) + '\n');
  }
}

/** One record as its JSONL line (validated first, so a bad record never reaches a file). */
export function recordLine(record: EpisodeRecord): string {
  return JSON.stringify(EpisodeRecordSchema.parse(record));
}

/** Reads and validates a records file; an invalid line throws RecordParseError naming it. */
export function readRecordsFile(path: string): EpisodeRecord[] {
  return parseRecordsJsonl(readFileSync(path, 'utf8'));
}
