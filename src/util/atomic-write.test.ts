import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendLineSync, tempPathFor, writeAll, writeFileAtomic } from './atomic-write.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'crl-atomic-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomic', () => {
  it('writes text and bytes, replaces an existing file and leaves no temp file behind', () => {
    const path = join(dir, 'out.json');
    writeFileAtomic(path, 'first\n');
    expect(readFileSync(path, 'utf8')).toBe('first\n');
    writeFileAtomic(path, new Uint8Array([1, 2, 3]));
    expect([...readFileSync(path)]).toEqual([1, 2, 3]);
    expect(readdirSync(dir)).toEqual(['out.json']);
  });

  it('puts the temp file beside the target (a rename is atomic only within one filesystem)', () => {
    const path = join(dir, 'sub', 'x.txt');
    expect(tempPathFor(path).startsWith(join(dir, 'sub', 'x.txt.tmp-'))).toBe(true);
  });

  it('a failed rename keeps the old content and removes the temp file', () => {
    // A non-empty directory at the target: the write succeeds, the rename over it fails.
    const path = join(dir, 'target');
    mkdirSync(path);
    writeFileSync(join(path, 'keep'), 'old');
    expect(() => writeFileAtomic(path, 'new')).toThrow();
    expect(readFileSync(join(path, 'keep'), 'utf8')).toBe('old');
    expect(readdirSync(dir)).toEqual(['target']);
  });

  it('writes a chunk above 2 GiB, which one writeSync refuses (a 0.6B model file)', () => {
    // To /dev/null: the limit is in the call, not the disk; a fresh Uint8Array is zero pages
    // until written, so this costs neither memory nor disk.
    const fd = openSync('/dev/null', 'w');
    try {
      expect(() => writeAll(fd, new Uint8Array(2 ** 31 + 4096))).not.toThrow();
    } finally {
      closeSync(fd);
    }
  });

  it('a missing directory is an error with the path, not a silent success', () => {
    expect(() => writeFileAtomic(join(dir, 'nope', 'x'), 'a')).toThrow(/ENOENT/);
  });
});

describe('appendLineSync', () => {
  it('appends whole lines', () => {
    const path = join(dir, 'log.jsonl');
    appendLineSync(path, '{"a":1}');
    appendLineSync(path, '{"a":2}');
    expect(readFileSync(path, 'utf8')).toBe('{"a":1}\n{"a":2}\n');
  });
});
