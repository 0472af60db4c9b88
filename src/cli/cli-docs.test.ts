import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

describe('docs/cli.md', () => {
  it('is what `npm run docs:cli` writes from the current --help texts (regenerate it when this fails)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-cli-docs-'));
    try {
      const out = join(dir, 'cli.md');
      const r = spawnSync('bash', [join(root, 'scripts', 'gen-cli-docs.sh'), out], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe(readFileSync(join(root, 'docs', 'cli.md'), 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
