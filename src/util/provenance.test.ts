import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalJson, codeVersion, configDiff, configHash, provenance, shortVersion } from './provenance.ts';

describe('provenance (src/util/provenance.ts)', () => {
  it('canonical JSON sorts keys at every level and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[2,{"y":2,"z":1}]},"b":1}',
    );
    expect(configHash({ a: 1, b: 2 })).toBe(configHash({ b: 2, a: 1 }));
    expect(configHash({ a: 1 })).not.toBe(configHash({ a: 2 }));
    expect(configHash({ a: 1 })).toMatch(/^sha256:[0-9a-f]{16}$/);
  });

  it('names paths inside the root relatively, so a moved pipeline keeps its hashes', () => {
    const a = join(tmpdir(), 'p1');
    const b = join(tmpdir(), 'elsewhere', 'p2');
    const cfg = (root: string) => ({ model: { init: join(root, 'systems', 'base', 'checkpoints', 'iter-1') } });
    expect(canonicalJson(cfg(a), a)).toBe('{"model":{"init":"<root>/systems/base/checkpoints/iter-1"}}');
    expect(configHash(cfg(a), a)).toBe(configHash(cfg(b), b));
    expect(configHash(cfg(a))).not.toBe(configHash(cfg(b)));
  });

  it('also after a scheme: a task set inside the pipeline (harbor:<root>/tasks) moves with it', () => {
    const a = join(tmpdir(), 'p1');
    const env = (root: string) => ({ env: { name: `harbor:${join(root, 'tasks', 'train')}` } });
    expect(canonicalJson(env(a), a)).toBe('{"env":{"name":"harbor:<root>/tasks/train"}}');
    expect(configHash(env(a), a)).toBe(configHash(env(join(tmpdir(), 'p2')), join(tmpdir(), 'p2')));
    // Outside the root, and relative names, stay as they are.
    expect(canonicalJson({ e: 'harbor:/elsewhere/tasks' }, a)).toBe('{"e":"harbor:/elsewhere/tasks"}');
    expect(canonicalJson({ e: 'kv-ledger' }, a)).toBe('{"e":"kv-ledger"}');
  });

  it('lists where two configs differ', () => {
    const d = configDiff({
      stored: { optim: { lr: 1e-4 }, seed: 0 },
      wanted: { optim: { lr: 3e-4 }, seed: 0, x: true },
    });
    expect(d).toEqual(['optim.lr: 0.0001 -> 0.0003', 'x: (absent) -> true']);
    expect(configDiff({ stored: { a: 1 }, wanted: { a: 1 } })).toEqual([]);
  });

  it("records this checkout's commit (or null outside git), the command line and the hash", () => {
    const v = codeVersion();
    if (v.commit !== null) expect(v.commit).toMatch(/^[0-9a-f]{40}$/);
    const p = provenance({ a: 1 }, undefined, new Date('2026-01-02T03:04:05Z'));
    expect(p.configHash).toBe(configHash({ a: 1 }));
    expect(p.createdAt).toBe('2026-01-02T03:04:05.000Z');
    expect(Array.isArray(p.command)).toBe(true);
    expect(shortVersion({ commit: 'abcdef0123', dirty: true })).toBe('abcdef0+dirty');
    expect(shortVersion(null)).toBe('unknown');
  });
});
