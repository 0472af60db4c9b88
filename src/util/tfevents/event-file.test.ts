import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENT_FILE_PREFIX, eventFilesIn, EventFileWriter, readEventFile } from './event-file.ts';
import { FILE_VERSION } from './event-proto.ts';
import { readEventDir } from './testing/read-event-dir.ts';

const dir = () => mkdtempSync(join(tmpdir(), 'crl-events-'));

describe('EventFileWriter', () => {
  it('makes nothing until the first append, then one file that starts with the file version', () => {
    const d = dir();
    const w = new EventFileWriter(d, () => 1_700_000_000.25);
    expect(eventFilesIn(d)).toEqual([]);
    w.append([{ step: 1, values: [{ tag: 'a/b', scalar: 1 }] }]);
    w.append([{ step: 2, values: [{ tag: 'a/b', scalar: 2 }] }]);
    expect(basename(w.file!)).toBe(`${EVENT_FILE_PREFIX}1700000000.${hostname()}`);
    const { events, tornBytes } = readEventFile(w.file!);
    expect(tornBytes).toBe(0);
    expect(events.map((e) => [e.step, e.fileVersion ?? e.values[0]!.scalar])).toEqual([
      [0, FILE_VERSION],
      [1, 1],
      [2, 2],
    ]);
    expect(events.every((e) => e.wallTime === 1_700_000_000.25)).toBe(true);
  });

  it('gives a second writer started in the same second a file of its own, read after the first', () => {
    const d = dir();
    const clock = () => 1_700_000_000;
    const first = new EventFileWriter(d, clock);
    first.append([{ step: 1, values: [{ tag: 'a/b', scalar: 1 }] }]);
    const second = new EventFileWriter(d, clock);
    second.append([{ step: 2, values: [{ tag: 'a/b', scalar: 2 }] }]);
    expect(second.file).toBe(`${first.file}.1`);
    expect(eventFilesIn(d)).toEqual([first.file, second.file]);
    expect(readEventDir(d).scalars).toEqual([
      { tag: 'a/b', step: 1, value: 1 },
      { tag: 'a/b', step: 2, value: 2 },
    ]);
  });

  it('the test reader tolerates a torn last record and refuses a flipped byte', () => {
    const d = dir();
    const w = new EventFileWriter(d);
    w.append([{ step: 1, values: [{ tag: 'a/b', scalar: 1 }] }]);
    const whole = readFileSync(w.file!);
    w.append([{ step: 2, values: [{ tag: 'a/b', scalar: 2 }] }]);
    const full = readFileSync(w.file!);
    const torn = join(d, `${EVENT_FILE_PREFIX}1.torn`);
    appendFileSync(torn, full.subarray(0, whole.length + 10));
    const read = readEventDir(d);
    expect(read.files.map((f) => f.tornBytes)).toEqual([10, 0]);
    const flipped = Buffer.from(full);
    flipped[whole.length + 20]! ^= 0x40;
    appendFileSync(join(d, `${EVENT_FILE_PREFIX}2.flipped`), flipped);
    expect(() => readEventDir(d)).toThrow(/CRC/);
  });
});
