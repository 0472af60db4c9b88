/**
 * Iteration wall time of `crl train --max-staleness S` for S = 0, 1, 2 (docs/async.md), where the
 * episodes are sampled: (a) in the trainer's process, (b) on a `crl serve` engine the trainer
 * pushes its weights to, (c) on `crl worker` processes through a throwaway redis-server, sampling
 * on that engine (workers sample on engine replicas, docs/distributed.md). Every
 * environment step waits --step-delay-ms first (an I/O-bound setting, as a sandbox or a test suite
 * is); the policy is a tiny model on chunk-sum, so the environment's waits dominate.
 *
 * Each round runs S = 0, 1, 2 one after the other per setting, so the three share the round's
 * load; the speedup is against the same round's S = 0. The figure is the mean `perf/iteration_s`
 * of timing.jsonl over iterations 2.. (iteration 1 fills the pipeline), with its split into
 * `perf/wait_s` and `perf/train_s`.
 *
 * Run: `npm run bench:async [-- --batch 8 --iterations 6 --step-delay-ms 200 --rounds 2
 *   --settings in-process,engine,workers --workers 2]`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServe, tinyCheckpoint, type Served } from '../src/adapters/testing/crl-serve.ts';
import { readTiming } from '../src/experiments/runs/timing-log.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../src/queue/testing/redis-server.ts';
import { CRL_BIN, crlAsync } from '../src/cli/testing/spawn-crl.ts';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const BATCH = Number(arg('batch', '8'));
const ITERATIONS = Number(arg('iterations', '6'));
const DELAY = Number(arg('step-delay-ms', '200'));
const ROUNDS = Number(arg('rounds', '2'));
const WORKERS = Number(arg('workers', '2'));
const SETTINGS = arg('settings', 'in-process,engine,workers').split(',');
const STALENESS = [0, 1, 2];
const TOKEN = 'bench-async-token';

const root = mkdtempSync(join(tmpdir(), 'crl-bench-async-'));
const env = { ...process.env, CRL_ADMIN_TOKEN: TOKEN };
const children: ChildProcess[] = [];
let redis: RedisProcess | undefined;
let engine: Served | undefined;

async function cleanup(): Promise<void> {
  children.forEach((c) => c.kill('SIGKILL'));
  engine?.child.kill('SIGKILL');
  await redis?.stop();
  rmSync(root, { recursive: true, force: true });
}

/** The flags that put sampling where the setting says (started once, reused by every run). */
async function settingFlags(setting: string): Promise<string[]> {
  if (setting === 'in-process') return [];
  if (setting === 'engine') {
    engine ??= await startServe(['--policy', join(root, 'init'), '--weights-dir', root], env);
    return ['--engine-url', engine.url];
  }
  // Workers run the episodes and sample on the same engine (the trainer pushes weights to it).
  if (setting === 'workers') {
    if (!redisAvailable('bench:async workers')) throw new Error('redis-server is not installed');
    if (!redis) {
      redis = await startRedis();
      const per = String(Math.ceil(BATCH / WORKERS));
      for (let w = 0; w < WORKERS; w++)
        children.push(
          spawn(process.execPath, [CRL_BIN, 'worker', '--queue', redis.url, '--concurrency', per], {
            stdio: 'ignore',
            env,
          }),
        );
    }
    return ['--queue', redis.url, ...(await settingFlags('engine'))];
  }
  throw new Error(`unknown setting ${setting}; valid: in-process, engine, workers`);
}

interface Timed {
  iteration: number;
  wait: number;
  train: number;
  staleness: number;
}

async function trainOnce(setting: string, S: number, run: string): Promise<Timed> {
  const cfg = join(root, 'config.json');
  writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0 } }));
  const args = [
    'train',
    '--env',
    'chunk-sum',
    '--init',
    join(root, 'init'),
    '--config',
    cfg,
    '--batch',
    String(BATCH),
    '--iterations',
    String(ITERATIONS),
    '--checkpoint-every',
    String(ITERATIONS),
    '--seed',
    '1',
    '--step-delay-ms',
    String(DELAY),
    '--max-staleness',
    String(S),
    ...(await settingFlags(setting)),
    '--out',
    run,
  ];
  const r = await crlAsync(args, { env, timeoutMs: 1_800_000 });
  if (r.code !== 0) throw new Error(`crl ${args.join(' ')} exited with ${r.code}: ${r.stderr}`);
  const lines = readTiming(join(run, 'timing.jsonl')).filter((l) => l.iteration >= 2);
  const mean = (k: string) => lines.reduce((a, l) => a + (l.timing[k] ?? 0), 0) / lines.length;
  return { iteration: mean('perf/iteration_s'), wait: mean('perf/wait_s'), train: mean('perf/train_s'), staleness: S };
}

async function main(): Promise<void> {
  await tinyCheckpoint(join(root, 'init'), { seed: 1 });
  const f = (x: number) => x.toFixed(2);
  console.log(
    `batch ${BATCH}, ${ITERATIONS} iterations (mean over 2..${ITERATIONS}), step delay ${DELAY} ms, ${WORKERS} workers\n`,
  );
  console.log('| setting | round | S = 0: s/iter (wait + train) | S = 1 | S = 2 | speedup S = 1 | speedup S = 2 |');
  console.log('|---|---|---|---|---|---|---|');
  for (const setting of SETTINGS)
    for (let round = 1; round <= ROUNDS; round++) {
      const t: Timed[] = [];
      for (const S of STALENESS) t.push(await trainOnce(setting, S, join(root, `${setting}-${round}-s${S}`)));
      const cell = (x: Timed) => `${f(x.iteration)} (${f(x.wait)} + ${f(x.train)})`;
      console.log(
        `| ${setting} | ${round} | ${t.map(cell).join(' | ')} | ${f(t[0]!.iteration / t[1]!.iteration)}x | ${f(t[0]!.iteration / t[2]!.iteration)}x |`,
      );
    }
}

main()
  .catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  })
  .finally(() => void cleanup());
