import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { MixedNote } from '../../report/run-files.ts';
import { createReuseGuard, MixedRunError } from './reuse-guard.ts';
import { createRunDir } from './run-dir.ts';

describe('reuse guard (crl reproduce reuses only what the preset would make)', () => {
  const setup = (allowMixed: boolean) => {
    const root = mkdtempSync(join(tmpdir(), 'crl-guard-'));
    const notes: MixedNote[] = [];
    const guard = createReuseGuard({ root, allowMixed, onMixed: (n) => notes.push(n) });
    return { root, notes, guard };
  };
  const where = { env: 'kv-ledger', seed: 1, system: 'compaction-rl' };

  it('passes a missing or identical run, refuses a different one naming the fields', () => {
    const { root, guard, notes } = setup(false);
    const dir = join(root, 'systems', 'r');
    const config = { optim: { policyLr: 1e-4 }, model: { init: join(root, 'systems', 'base') } };
    guard.run({ dir, config, what: 'training', ...where }); // nothing there yet
    createRunDir({ dir, system: 'compaction-rl', config, root });
    guard.run({
      dir,
      config: { model: { init: join(root, 'systems', 'base') }, optim: { policyLr: 1e-4 } },
      what: 'training',
      ...where,
    });
    expect(() =>
      guard.run({ dir, config: { ...config, optim: { policyLr: 3e-4 } }, what: 'training', ...where }),
    ).toThrow(MixedRunError);
    try {
      guard.run({ dir, config: { ...config, optim: { policyLr: 3e-4 } }, what: 'training', ...where });
    } catch (e) {
      expect((e as Error).message).toContain(
        'systems/r was made with another config than this preset asks for (training)',
      );
      expect((e as Error).message).toContain('optim.policyLr: 0.0001 -> 0.0003');
    }
    expect(notes).toEqual([]);
  });

  it('a run made on engines or rollout workers is the same run: engine, queue and step delay are left out', () => {
    const { root, guard } = setup(false);
    const dir = join(root, 'systems', 'r');
    const config = { optim: { policyLr: 1e-4 }, env: { name: 'kv-ledger' } };
    createRunDir({
      dir,
      system: 'compaction-rl',
      config: {
        ...config,
        env: { name: 'kv-ledger', stepDelayMs: 50 },
        engine: { url: 'http://127.0.0.1:30000' },
        queue: { url: 'redis://127.0.0.1:6379' },
      },
      root,
    });
    guard.run({ dir, config, what: 'training', ...where });
    expect(() =>
      guard.run({ dir, config: { ...config, env: { name: 'fog-courier' } }, what: 'training', ...where }),
    ).toThrow(/env\.name/);
  });

  it('with allowMixed, records the reuse instead; evaluation files without a request count as different', () => {
    const { root, guard, notes } = setup(true);
    const dir = join(root, 'systems', 'r');
    createRunDir({ dir, system: 'compaction-rl', config: { a: 1 }, root });
    guard.run({ dir, config: { a: 2 }, what: 'training', ...where });
    const file = join(root, 'e.json');
    writeFileSync(file, '{"kind":"crl-eval"}');
    guard.evalFile({ path: file, request: { tasks: 16 }, ...where });
    expect(notes.map((n) => [n.path, n.kind, n.differs[0]])).toEqual([
      ['systems/r', 'run', 'a: 1 -> 2'],
      ['e.json', 'eval', expect.stringContaining('records no request')],
    ]);
  });

  // A field added to a schema with a default that is what runs did before it existed must not
  // make every earlier run directory "another config" (reuse then needed --allow-mixed).
  it("reads a stored config with today's schema when given one, so a field added since with its default compares equal", () => {
    const { root, guard } = setup(false);
    const dir = join(root, 'systems', 'base');
    const schema = z.object({ lr: z.number(), answerShare: z.number().default(0) }).strict();
    createRunDir({ dir, system: 'base', config: { lr: 1e-3 }, root });
    const wanted = schema.parse({ lr: 1e-3 });
    const parse = (c: unknown) => schema.parse(c);
    guard.run({ dir, config: wanted, what: 'SFT base', ...where, parse });
    expect(() => guard.run({ dir, config: wanted, what: 'SFT base', ...where })).toThrow(
      /answerShare: \(absent\) -> 0/,
    );
    // A value other than the default is still another config.
    expect(() =>
      guard.run({ dir, config: schema.parse({ lr: 1e-3, answerShare: 0.3 }), what: 'SFT base', ...where, parse }),
    ).toThrow(MixedRunError);
    // A stored config the schema no longer reads is compared as it is stored.
    expect(() =>
      guard.run({ dir, config: wanted, what: 'SFT base', ...where, parse: () => { throw new Error('old'); } }),
    ).toThrow(MixedRunError);
  });
});

