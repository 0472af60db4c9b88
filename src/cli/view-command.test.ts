import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { crl } from './testing/spawn-crl.ts';

describe('crl view', () => {
  it('explains bad inputs in one line and exits 2, without a stack trace', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-view-cli-'));
    writeFileSync(join(dir, 'notes.txt'), 'hello');
    writeFileSync(join(dir, 'bad.jsonl'), '{"episodeId": 1}\n');
    const cases: [string[], RegExp][] = [
      [[join(dir, 'missing')], /missing does not exist/],
      [[dir], /is not a run directory .* give a directory made by crl train or crl reproduce/],
      [[join(dir, 'notes.txt')], /neither a directory nor an episode file/],
      [[join(dir, 'bad.jsonl')], /bad\.jsonl: episode record on line 1 is invalid/],
      [[dir, '--port', 'x'], /--port must be an integer from 0 to 65535/],
    ];
    for (const [args, message] of cases) {
      const r = crl(['view', ...args]);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack
    }
  });
});
