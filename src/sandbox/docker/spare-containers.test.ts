import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../util/testing/wait-for.ts';
import type { SandboxSpec } from '../backend.ts';
import { dockerBackend } from '../docker-backend.ts';
import { OWNER_LABEL, SANDBOX_LABEL } from '../docker-cli.ts';
import { dockerRun, RUN_LABEL } from '../docker-run-scope.ts';
import { dockerAvailable, TEST_BASE_IMAGE } from '../testing/docker-available.ts';
import { readySpares, removeSpares, spareNames } from './spare-containers.ts';

const available = dockerAvailable('docker spare containers');
const host = mkdtempSync(join(tmpdir(), 'crl-spares-test-'));
afterAll(async () => {
  await removeSpares();
  rmSync(host, { recursive: true, force: true });
});

const SPEC: SandboxSpec = {
  image: TEST_BASE_IMAGE,
  dirs: [{ path: '/app', writable: true }],
  workdir: '/app',
  limits: { commandTimeoutSec: 20, memoryMb: 256, processes: 64 },
};

/** Labels of a container (by name), or null when the daemon does not know it. */
function labels(name: string): Record<string, string> | null {
  const r = spawnSync('docker', ['container', 'inspect', '--format', '{{json .Config.Labels}}', name], {
    encoding: 'utf8',
  });
  return r.status === 0 ? (JSON.parse(r.stdout) as Record<string, string>) : null;
}

const running = (name: string): boolean =>
  spawnSync('docker', ['container', 'inspect', '--format', '{{.State.Running}}', name], {
    encoding: 'utf8',
  }).stdout.trim() === 'true';

describe.skipIf(!available)('docker spare containers', () => {
  it('hands each episode a container nothing ran in, started ahead and labelled as any sandbox', async () => {
    const backend = dockerBackend({ spares: 2 });
    const first = await backend.start(SPEC);
    try {
      // The next episode is announced: its container starts while this one runs.
      backend.prepare!(SPEC);
      await first.run('echo agent > /app/left-by-the-first; (sleep 300 &); export X=1');
    } finally {
      await first.close();
    }
    await waitFor(() => readySpares() >= 1, { what: 'a spare ready', timeoutMs: 60_000 });
    const waiting = [...spareNames()];
    for (const name of waiting) {
      expect(running(name)).toBe(true);
      const l = labels(name)!;
      expect(l[SANDBOX_LABEL]).toBe('1');
      expect(l[OWNER_LABEL]).toContain(`/${process.pid}.`);
      const run = dockerRun();
      if (run !== null) expect(l[RUN_LABEL]).toBe(run);
    }
    const second = await backend.start(SPEC);
    try {
      // Taken from the spares: one of them is no longer waiting, and it runs this episode.
      const taken = waiting.filter((n) => !spareNames().has(n));
      expect(taken.length).toBeGreaterThanOrEqual(1);
      const r = await second.run(
        'ls /app; grep -l "^sleep" /proc/[0-9]*/comm 2>/dev/null | wc -l; echo "X=$X"; touch /app/mine',
      );
      expect(r.text).not.toContain('left-by-the-first');
      expect(r.text).toMatch(/^0$/m);
      expect(r.text).toContain('X=\n');
      const mine = taken.filter((n) => spawnSync('docker', ['exec', n, 'test', '-e', '/app/mine']).status === 0);
      expect(mine).toHaveLength(1);
      await second.close();
      expect(labels(mine[0]!)).toBeNull(); // used once: removed with its episode, never handed out again
    } finally {
      await second.close();
    }
  });

  it('gives a spare its seeds when taken: links kept as links, files owned by root', async () => {
    const seed = join(host, 'seed');
    mkdirSync(join(seed, 'sub'), { recursive: true });
    writeFileSync(join(seed, 'sub', 'f.txt'), 'seeded\n');
    symlinkSync('/etc/passwd', join(seed, 'link'));
    const backend = dockerBackend({ spares: 1 });
    const spec = { ...SPEC, dirs: [...SPEC.dirs, { path: '/solution', writable: false }] };
    for (let i = 0; i < 2; i++) {
      backend.prepare!(spec);
      await waitFor(() => readySpares() >= 1, { what: 'a spare ready', timeoutMs: 60_000 });
      writeFileSync(join(seed, 'sub', 'n.txt'), `episode ${i}\n`); // read when the episode starts, not before
      const s = await backend.start({ ...spec, seed: [{ from: seed, to: '/solution' }] });
      try {
        const r = await s.run(
          'cat /solution/sub/f.txt /solution/sub/n.txt; stat -c %U /solution/sub/f.txt; readlink /solution/link',
        );
        expect(r.text).toBe(`seeded\nepisode ${i}\nroot\n/etc/passwd\n`);
      } finally {
        await s.close();
      }
    }
  });

  it('removes every spare on request, and none is left running', async () => {
    const backend = dockerBackend({ spares: 2 });
    for (let i = 0; i < 3; i++) backend.prepare!(SPEC); // one more than it keeps
    await waitFor(() => readySpares() >= 2, { what: 'two spares ready', timeoutMs: 60_000 });
    const names = [...spareNames()];
    expect(names).toHaveLength(2);
    await removeSpares();
    expect(spareNames().size).toBe(0);
    await waitFor(() => names.every((n) => labels(n) === null), { what: 'the spares gone', timeoutMs: 60_000 });
  });

  it('leaves no spare behind when the process that owns them is killed', async () => {
    const script = `
      import { dockerBackend } from ${JSON.stringify(new URL('../docker-backend.ts', import.meta.url).pathname)};
      import { readySpares } from ${JSON.stringify(new URL('./spare-containers.ts', import.meta.url).pathname)};
      const backend = dockerBackend({ spares: 2 });
      const s = await backend.start(${JSON.stringify(SPEC)});
      backend.prepare(${JSON.stringify(SPEC)});
      await s.run('true');
      const t = setInterval(() => { if (readySpares() >= 1) { process.stdout.write('spare\\n'); clearInterval(t); } }, 20);
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const owned = (): string[] =>
      spawnSync(
        'docker',
        ['ps', '-a', '--filter', `label=${SANDBOX_LABEL}`, '--format', `{{.ID}} {{.Label "${OWNER_LABEL}"}}`],
        {
          encoding: 'utf8',
        },
      )
        .stdout.split('\n')
        .filter((l) => l.includes(`/${child.pid}.`));
    try {
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await waitFor(() => out.includes('spare'), { what: 'the child’s spare ready', timeoutMs: 60_000 });
      expect(owned().length).toBeGreaterThanOrEqual(2); // its sandbox and a spare
    } finally {
      child.kill('SIGKILL');
    }
    await waitFor(() => owned().length === 0, { what: 'the killed owner’s containers gone', timeoutMs: 60_000 });
  });
});
