import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../util/testing/wait-for.ts';
import { Sandbox } from './supervised-shell.ts';
import { sandboxAvailable } from './testing/sandbox-available.ts';

const available = sandboxAvailable('sandbox shell tests');

async function withSandbox<T>(
  f: (s: Sandbox) => Promise<T>,
  limits: Parameters<typeof Sandbox.start>[0]['limits'] = {},
): Promise<T> {
  const s = await Sandbox.start({ dirs: [{ path: '/app', writable: true }], workdir: '/app', limits });
  try {
    return await f(s);
  } finally {
    await s.close();
  }
}

describe.skipIf(!available)('Sandbox: one persistent shell', () => {
  it('keeps the working directory and variables across commands, and reports exit codes', async () => {
    await withSandbox(async (s) => {
      expect(await s.run('echo hi; pwd')).toMatchObject({ text: 'hi\n/app\n', exitCode: 0 });
      expect((await s.run('cd /tmp && X=5 && export Y=6')).exitCode).toBe(0);
      expect(await s.run('echo $X $Y; pwd')).toMatchObject({ text: '5 6\n/tmp\n', exitCode: 0 });
      expect((await s.run('false')).exitCode).toBe(1);
      expect((await s.run('(exit 42)')).exitCode).toBe(42);
      expect(await s.run('printf "no newline"')).toMatchObject({ text: 'no newline', exitCode: 0 });
    });
  });

  it('runs multi-line commands, here-documents, stderr in order, and survives syntax errors', async () => {
    await withSandbox(async (s) => {
      expect((await s.run('cat <<EOF > f.txt\nline 1\nline 2\nEOF\nwc -l < f.txt')).text).toBe('2\n');
      expect((await s.run('echo out; echo err >&2; echo out2')).text).toBe('out\nerr\nout2\n');
      const bad = await s.run('echo "unterminated');
      expect(bad.exitCode).toBe(2);
      expect(bad.text).toMatch(/unexpected EOF/);
      expect(await s.run('if true; then echo fine; fi')).toMatchObject({ text: 'fine\n', exitCode: 0 });
      // A command never reads the command stream: stdin is empty.
      expect(await s.run('cat; read x; echo "[$x]"')).toMatchObject({ text: '[]\n', exitCode: 0 });
      expect(await s.run("echo 'quotes \" and \\\\ and $HOME and üñí'")).toMatchObject({
        text: 'quotes " and \\\\ and $HOME and üñí\n',
      });
    });
  });

  it('starts a fresh shell after `exit`, and says so', async () => {
    await withSandbox(async (s) => {
      await s.run('cd /tmp; X=1');
      expect(await s.run('exit 3')).toMatchObject({ exitCode: 3, shellRestarted: true });
      expect(await s.run('pwd; echo "[$X]"')).toMatchObject({ text: '/app\n[]\n', exitCode: 0, shellRestarted: false });
    });
  });

  it('cuts long output to its cap, keeping head and tail around a marker', async () => {
    await withSandbox(
      async (s) => {
        const r = await s.run('seq 1 20000');
        expect(r.totalBytes).toBe(108894);
        expect(r.text.length).toBeLessThan(1100);
        expect(r.text.startsWith('1\n2\n3\n')).toBe(true);
        expect(r.text.endsWith('19999\n20000\n')).toBe(true);
        expect(r.text).toContain(`[... ${r.cutBytes} bytes of output cut ...]`);
        expect(r.exitCode).toBe(0);
      },
      { outputBytes: 1024 },
    );
  });

  it('puts output a background job prints between commands into the next observation', async () => {
    await withSandbox(async (s) => {
      await s.run('(sleep 0.2; echo late; touch /app/late.done) &');
      // The marker is written after the echo, so by the time the host sees it "late" is in the pipe.
      await waitFor(() => existsSync(join(s.hostPath('/app'), 'late.done')), { what: 'the background job to print' });
      expect((await s.run('echo now')).text).toBe('late\nnow\n');
    });
  });

  it('runs the verifier in a fresh shell, after killing what the agent left running', async () => {
    await withSandbox(async (s) => {
      await s.run('bash() { echo fake; }; alias bash=true; X=agent; sleep 1000 & echo $! > /app/bg.pid');
      const v = await s.runFresh(
        'echo "[$X]"; kill -0 $(cat /app/bg.pid) 2>/dev/null && echo alive || echo gone; pwd',
        {
          timeoutMs: 10_000,
        },
      );
      expect(v).toMatchObject({ text: '[]\ngone\n/app\n', exitCode: 0 });
    });
  });
});
