/**
 * The queue's trust boundary with real processes (docs/distributed.md, "Who chooses what a worker
 * runs"): a throwaway redis-server, `crl worker` processes and the trainer as a `crl train`
 * process. A worker whose CRL_QUEUE_SECRET differs from the trainer's runs none of its episodes,
 * and the trainer ends with one line naming the refused jobs; a worker without a secret says at
 * start who chooses what it runs; a worker refuses task folders outside its --task-root.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { countLinesTask } from '../env/harbor/testing/task-folders.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../queue/testing/redis-server.ts';
import { sandboxAvailable } from '../sandbox/testing/sandbox-available.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { CRL_BIN, crl, crlAsync, withoutNativeNotice } from './testing/spawn-crl.ts';

const available = redisAvailable('queue trust CLI tests');

/** The environment without any secret of the caller's, plus `secret` when given. */
function envWith(secret?: string): NodeJS.ProcessEnv {
  const { CRL_QUEUE_SECRET: _, ...rest } = process.env;
  return secret === undefined ? rest : { ...rest, CRL_QUEUE_SECRET: secret };
}

/** The expert on chunk-sum, a tiny model from scratch: a trainer that needs no checkpoint and no engine. */
const tinyTrain = ['--model', 'tiny', '--from-scratch', '--actor', 'expert', '--iterations', '1'];
/** A trainer's whole life here takes seconds of CPU, but minutes on a loaded machine: a deadline, not a timing. */
const TRAIN_MS = 200_000;

describe.skipIf(!available)(
  'the queue trust boundary (real redis-server, crl worker and crl train)',
  { timeout: 240_000 },
  () => {
    const children: ChildProcess[] = [];
    const redises: RedisProcess[] = [];
    const dirs: string[] = [];
    afterEach(async () => {
      children.splice(0).forEach((c) => c.kill('SIGKILL'));
      await Promise.all(redises.splice(0).map((r) => r.kill()));
      dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
    });
    const tempDir = (prefix: string) => {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    };
    const worker = (url: string, env: NodeJS.ProcessEnv, extra: string[] = []) => {
      const child = spawn(process.execPath, [CRL_BIN, 'worker', '--queue', url, ...extra], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env,
      });
      children.push(child);
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.stdout.resume();
      return () => withoutNativeNotice(err);
    };
    /** The trainer's stderr lines that are not its progress or notes ([queue] …, [train] …). */
    const errorLines = (stderr: string) =>
      stderr
        .trim()
        .split('\n')
        .filter((l) => l && !l.startsWith('['));

    it("a worker with another secret runs none of the trainer's episodes; the trainer ends with one line naming them", async () => {
      const redis = await startRedis();
      redises.push(redis);
      const out = tempDir('crl-trust-secret-');
      const workerErr = worker(redis.url, envWith('b'));
      await waitFor(() => /taking episode jobs/.test(workerErr()), { what: 'the worker to start', timeoutMs: 120_000 });
      expect(workerErr()).not.toMatch(/CRL_QUEUE_SECRET is not set/);
      const r = await crlAsync(
        ['train', '--env', 'chunk-sum', ...tinyTrain, '--batch', '2', '--queue', redis.url, '--out', join(out, 'run')],
        { env: envWith('a'), timeoutMs: TRAIN_MS },
      );
      expect(r.code, r.stderr).toBe(2);
      const lines = errorLines(r.stderr);
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^crl: error: iteration 1: 2 episode job\(s\) refused \(it1-ep0, it1-ep1\): the job's signature does not match this worker's CRL_QUEUE_SECRET/,
      );
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(workerErr()).toMatch(/refused: the job's signature does not match/);
      expect(workerErr()).not.toMatch(/started/);
    });

    it('a worker without a secret warns at start that whoever can write to the queue chooses what it runs', async () => {
      const redis = await startRedis();
      redises.push(redis);
      const workerErr = worker(redis.url, envWith());
      await waitFor(() => /taking episode jobs/.test(workerErr()), { what: 'the worker to start', timeoutMs: 120_000 });
      expect(workerErr()).toMatch(
        /crl worker: warning: CRL_QUEUE_SECRET is not set, so whoever can write to the queue chooses what this worker runs/,
      );
    });

    it('a --task-root that is not a folder is one clear line, exit 2', () => {
      const r = crl(['worker', '--queue', 'redis://127.0.0.1:1', '--task-root', join(tmpdir(), 'crl-no-such-root')], {
        env: envWith('a'),
      });
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toMatch(/^crl: error: --task-root .*crl-no-such-root: no such folder/);
    });

    it.skipIf(!sandboxAvailable('queue trust: task folders'))(
      "task folders: a worker refuses the trainer's folders outside its --task-root (distributed-train.test.ts runs them under it)",
      async () => {
        const redis = await startRedis();
        redises.push(redis);
        const root = tempDir('crl-trust-tasks-');
        countLinesTask(join(root, 'tasks', 'one'), 2);
        const args = [
          'train',
          '--env',
          `harbor:${join(root, 'tasks')}`,
          '--knobs',
          '{"exposeSolution":true}',
          '--context',
          '1024',
          ...tinyTrain,
          '--batch',
          '1',
          '--queue',
          redis.url,
        ];
        const elsewhere = tempDir('crl-trust-elsewhere-');
        const workerErr = worker(redis.url, envWith('a'), ['--task-root', elsewhere]);
        await waitFor(() => /taking episode jobs/.test(workerErr()), {
          what: 'the worker to start',
          timeoutMs: 120_000,
        });
        const r = await crlAsync([...args, '--out', join(root, 'run')], { env: envWith('a'), timeoutMs: TRAIN_MS });
        expect(r.code, r.stderr).toBe(2);
        expect(errorLines(r.stderr)).toEqual([
          expect.stringMatching(/refused \(it1-ep0\): the job's task folder .* is outside --task-root/),
        ]);
        expect(workerErr()).not.toMatch(/started/);
      },
    );
  },
);
