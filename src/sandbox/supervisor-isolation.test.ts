import { describe, expect, it } from 'vitest';
import { Sandbox } from './supervised-shell.ts';
import { sandboxAvailable } from './testing/sandbox-available.ts';

/**
 * Under bwrap the agent runs as its supervisor's uid, so the supervisor runs from an
 * execute-only bash, which the kernel makes undumpable (docs/sandbox.md, "The control channel"):
 * its descriptors, environment and memory are closed to the agent, and it still serves commands.
 */
describe.skipIf(!sandboxAvailable('supervisor isolation'))('the bwrap supervisor, seen from the agent', () => {
  it('cannot be opened through /proc (fds, environ, mem) nor read as a file, and still runs commands', async () => {
    const s = await Sandbox.start({ dirs: [{ path: '/app', writable: true }], workdir: '/app' });
    try {
      const r = await s.run(
        'for p in fd environ mem; do cat /proc/1/$p > /dev/null 2>&1 && echo "open $p"; done; ' +
          'ls /proc/1/fd > /dev/null 2>&1 && echo "listed fd"; { printf Z > /proc/1/fd/0; } 2>/dev/null && echo wrote; ' +
          'cat /.crl-supervisor > /dev/null 2>&1 && echo "read binary"; echo checked',
      );
      expect(r.text.trim()).toBe('checked');
      // The same probe against the agent's own shell succeeds: the check can tell the difference.
      const own = await s.run('ls /proc/$$/fd > /dev/null && cat /proc/$$/environ > /dev/null && echo readable');
      expect(own.text.trim()).toBe('readable');
      const v = await s.runFresh('echo verifier-ran', { timeoutMs: 10_000 });
      expect(v.text.trim()).toBe('verifier-ran');
    } finally {
      await s.close();
    }
  });
});
