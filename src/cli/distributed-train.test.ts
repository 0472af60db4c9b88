/**
 * `crl train --queue` with real processes only: a throwaway redis-server, `crl worker` and
 * `crl serve` processes, the trainer itself as a `crl` process. Workers, engines, the trainer and
 * Redis are killed mid-run (SIGKILL); the run must end with every iteration once, each with the
 * whole batch.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startServe, tinyCheckpoint, type Served } from '../adapters/testing/crl-serve.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { countLinesTask } from '../env/harbor/testing/task-folders.ts';
import { sandboxAvailable } from '../sandbox/testing/sandbox-available.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../queue/testing/redis-server.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { CRL_BIN, crlAsync, withoutNativeNotice } from './testing/spawn-crl.ts';

const available = redisAvailable('distributed training tests');
const TOKEN = 'distributed-train-test-token';

interface Proc {
  child: ChildProcess;
  stderr(): string;
  exited: Promise<number | null>;
}

function crlProcess(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Proc {
  const child = spawn(process.execPath, [CRL_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((res) => child.once('close', (code) => res(code)));
  return { child, stderr: () => withoutNativeNotice(err), exited };
}

/** metrics.jsonl without rollout/retried, which counts jobs the queue ran again (how many depends on kills and load). */
function withoutRetried(path: string) {
  return readMetrics(path).map(({ iteration, metrics: { 'rollout/retried': _, ...rest } }) => ({
    iteration,
    metrics: rest,
  }));
}

const iterationsLogged = (run: string) =>
  existsSync(join(run, 'metrics.jsonl')) ? readMetrics(join(run, 'metrics.jsonl')).map((m) => m.iteration) : [];

describe.skipIf(!available)(
  'crl train --queue (real redis-server, crl worker and crl serve processes)',
  { timeout: 300_000 },
  () => {
    const procs: Proc[] = [];
    const servers: Served[] = [];
    const redises: RedisProcess[] = [];
    const worker = (url: string, extra: string[] = []) => {
      const p = crlProcess(['worker', '--queue', url, '--concurrency', '2', ...extra]);
      procs.push(p);
      return p;
    };
    const redis = async (port?: number) => {
      const r = await startRedis(port ? { port } : {});
      redises.push(r);
      return r;
    };
    afterEach(async () => {
      procs.splice(0).forEach((p) => p.child.kill('SIGKILL'));
      servers.splice(0).forEach((s) => s.child.kill('SIGKILL'));
      await Promise.all(redises.splice(0).map((r) => r.kill()));
    });
    afterAll(() => procs.forEach((p) => p.child.kill('SIGKILL')));

    it('one of two workers and one of two engines killed mid-run: exit 0, every iteration with the whole batch, retries counted', async () => {
      const root = mkdtempSync(join(tmpdir(), 'crl-dist-'));
      await tinyCheckpoint(join(root, 'engine-init'), { seed: 1 });
      await tinyCheckpoint(join(root, 'trainer-init'), { seed: 2 });
      const env = { ...process.env, CRL_ADMIN_TOKEN: TOKEN };
      const engines = await Promise.all(
        [0, 1].map(() => startServe(['--policy', join(root, 'engine-init'), '--weights-dir', root], env)),
      );
      servers.push(...engines);
      const q = await redis();
      const [w1, w2] = [worker(q.url), worker(q.url)];
      const run = join(root, 'run');
      // Steps wait 300 ms, so an episode lasts long enough to be cut in the middle.
      const trainer = crlProcess(
        [
          'train',
          '--env',
          'chunk-sum',
          '--init',
          join(root, 'trainer-init'),
          '--batch',
          '4',
          '--iterations',
          '4',
          '--checkpoint-every',
          '1',
          '--step-delay-ms',
          '300',
          '--queue',
          q.url,
          '--queue-timeout',
          '120',
          '--engine-url',
          engines.map((e) => e.url).join(','),
          '--out',
          run,
        ],
        env,
      );
      procs.push(trainer);
      await waitFor(() => /started/.test(w1.stderr()), { what: 'worker 1 to start an episode', timeoutMs: 120_000 });
      w1.child.kill('SIGKILL');
      await waitFor(() => iterationsLogged(run).length >= 2, { what: 'iteration 2 to finish', timeoutMs: 200_000 });
      engines[0]!.child.kill('SIGKILL');
      const code = await trainer.exited;
      expect(code, trainer.stderr()).toBe(0);
      const metrics = readMetrics(join(run, 'metrics.jsonl'));
      expect(metrics.map((m) => m.iteration)).toEqual([1, 2, 3, 4]);
      for (const m of metrics) expect(m.metrics['rollout/episodes']).toBe(4);
      // The lost worker's jobs ran again on the other one: counted in metrics.jsonl, none given up.
      const retried = metrics.map((m) => m.metrics['rollout/retried']!);
      expect(
        retried.reduce((a, b) => a + b, 0),
        JSON.stringify(retried),
      ).toBeGreaterThan(0);
      expect(metrics.every((m) => m.metrics['rollout/failed'] === 0)).toBe(true);
      // The records the engines sampled are the trainer's weights: the recompute agrees with them.
      for (const m of metrics) expect(m.metrics['policy/sampler_logprob_mismatch']!).toBeLessThan(1e-4);
      expect(trainer.stderr()).toMatch(/\[queue\] iteration \d: 4\/4 done/);
      expect(w2.stderr()).toMatch(/\(attempt 2\)/); // the lost worker's episode ran again here
    });

    it('with no worker, fails within its deadline with one clear line, exit 2', async () => {
      const q = await redis();
      const out = mkdtempSync(join(tmpdir(), 'crl-dist-noworker-'));
      const t0 = Date.now();
      const r = await crlAsync(
        [
          'train',
          '--env',
          'chunk-sum',
          '--model',
          'tiny',
          '--from-scratch',
          '--actor',
          'expert',
          '--batch',
          '2',
          '--iterations',
          '1',
          '--queue',
          q.url,
          '--queue-timeout',
          '3',
          '--out',
          join(out, 'run'),
        ],
        { timeoutMs: 120_000 },
      );
      expect(r.code, r.stderr).toBe(2);
      const lines = r.stderr
        .trim()
        .split('\n')
        .filter((l) => !l.startsWith('['));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /no rollout worker took episode jobs from redis:\/\/127\.0\.0\.1:\d+ .* for 3 s; start one with: crl worker --queue/,
      );
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(Date.now() - t0).toBeLessThan(100_000);
    });

    it.skipIf(!sandboxAvailable('task folders through the queue'))(
      'task folders through the queue: a worker loads the folder of each job and runs it in its sandbox',
      async () => {
        const root = mkdtempSync(join(tmpdir(), 'crl-dist-tasks-'));
        countLinesTask(join(root, 'tasks', 'one'), 2);
        countLinesTask(join(root, 'tasks', 'two'), 6);
        const q = await redis();
        // Signed jobs and results (CRL_QUEUE_SECRET on both sides), folders under the worker's root.
        const env = { ...process.env, CRL_QUEUE_SECRET: 'task-folders-secret' };
        const w = crlProcess(
          ['worker', '--queue', q.url, '--concurrency', '2', '--task-root', join(root, 'tasks')],
          env,
        );
        procs.push(w);
        const args = [
          '--env',
          `harbor:${join(root, 'tasks')}`,
          '--knobs',
          '{"exposeSolution":true}',
          '--model',
          'tiny',
          '--context',
          '1024',
          '--from-scratch',
          '--actor',
          'expert',
          '--batch',
          '3',
          '--iterations',
          '1',
        ];
        // Deadlines, not timings: a loaded machine takes minutes for what takes seconds of CPU. The
        // in-process run shares nothing with the queued one, so both run at once.
        const [queued, local] = await Promise.all([
          crlAsync(['train', ...args, '--queue', q.url, '--out', join(root, 'queued')], { env, timeoutMs: 200_000 }),
          crlAsync(['train', ...args, '--out', join(root, 'local')], { timeoutMs: 200_000 }),
        ]);
        expect(queued.code, queued.stderr).toBe(0);
        expect(w.stderr()).not.toMatch(/refused|CRL_QUEUE_SECRET is not set/);
        expect(JSON.parse(queued.last)).toMatchObject({ iteration: 1, successRate: 1 });
        expect(local.code, local.stderr).toBe(0);
        // A loaded machine can stall a job past its lock and BullMQ runs it again: the episode is
        // the same, so everything but that count (rollout/retried) is the in-process run's.
        expect(withoutRetried(join(root, 'queued', 'metrics.jsonl'))).toEqual(
          withoutRetried(join(root, 'local', 'metrics.jsonl')),
        );
      },
      480_000,
    );

    it('trainer killed mid-run and resumed, Redis killed and restarted empty: every iteration once, as the in-process run', async () => {
      const root = mkdtempSync(join(tmpdir(), 'crl-dist-resume-'));
      const q = await redis();
      worker(q.url);
      worker(q.url);
      const args = [
        '--env',
        'chunk-sum',
        '--model',
        'tiny',
        '--from-scratch',
        '--actor',
        'expert',
        '--batch',
        '4',
        '--iterations',
        '4',
        '--checkpoint-every',
        '1',
        '--step-delay-ms',
        '200',
      ];
      const run = join(root, 'run');
      // The in-process reference shares nothing with the queued run: it runs meanwhile.
      const reference = crlProcess(['train', ...args, '--out', join(root, 'in-process')]);
      procs.push(reference);
      const first = crlProcess(['train', ...args, '--queue', q.url, '--out', run]);
      procs.push(first);
      await waitFor(() => iterationsLogged(run).length >= 1, { what: 'iteration 1 to finish', timeoutMs: 120_000 });
      first.child.kill('SIGKILL');
      await first.exited;

      // Redis dies with every job it held and comes back empty on the same port; the workers reconnect.
      await q.kill();
      await redis(q.port);
      const resumed = await crlAsync(['train', '--resume', run, '--actor', 'expert'], { timeoutMs: 200_000 });
      expect(resumed.code, resumed.stderr).toBe(0);

      expect(await reference.exited, reference.stderr()).toBe(0);
      const got = withoutRetried(join(run, 'metrics.jsonl'));
      const want = withoutRetried(join(root, 'in-process', 'metrics.jsonl'));
      expect(got.map((m) => m.iteration)).toEqual([1, 2, 3, 4]);
      // Same episodes, same order, same update: the same metrics (the timings are in timing.jsonl;
      // jobs Redis lost after they started ran again, which only rollout/retried counts).
      expect(got).toEqual(want);
      expect(readFileSync(join(run, 'samples', 'iter-000004.txt'), 'utf8')).toBe(
        readFileSync(join(root, 'in-process', 'samples', 'iter-000004.txt'), 'utf8'),
      );
    });
  },
);
