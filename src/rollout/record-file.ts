import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { EpisodeRecordSchema, parseRecordsJsonl, type EpisodeRecord } from './record.ts';

/**
 * Episode records on disk, one JSON object per line. The writer appends each record as it ends,
 * so a long run that stops early still leaves every finished episode behind.
 */
export class RecordWriter {
  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, '');
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
