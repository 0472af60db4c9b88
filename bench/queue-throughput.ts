/**
 * Rollout throughput through the queue (docs/distributed.md): one batch of chunk-sum episodes
 * acted by the scripted expert, every environment step delayed by --step-delay-ms (an I/O-bound
 * setting, as a sandbox or a test suite is), run (a) in this process one episode at a time and
 * (b) on 1, 2, 4 real `crl worker` processes with one episode at a time each, through a throwaway
 * redis-server. The expert keeps the CPUs out of the way, so the ideal is linear in the workers.
 * Then the queue's own latency per job: the time from a job being added to its record reaching
 * the trainer, minus the episode's run time, one job at a time and with the whole batch at once.
 *
 * Each setting first runs one unmeasured batch (the workers' first episodes compile).
 *
 * Run: `npm run bench:queue [-- --batch 16 --step-delay-ms 50 --rounds 3 --workers 1,2,4]`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createEnvironment } from '../src/env/create-environment.ts';
import { getFamily } from '../src/env/registry.ts';
import { withStepDelay } from '../src/env/step-delay.ts';
import { episodeJobs } from '../src/experiments/train/iteration-stages.ts';
import { loadTokenizer } from '../src/model/tokenizer/load-tokenizer.ts';
import { EpisodeQueue } from '../src/queue/episode-queue.ts';
import type { EpisodeMessageInput } from '../src/queue/episode-message.ts';
import { startRedis } from '../src/queue/testing/redis-server.ts';
import { resolveRolloutConfig } from '../src/rollout/config.ts';
import { episodeOfJob } from '../src/rollout/episode-job.ts';
import { runEpisodes } from '../src/rollout/runner.ts';
import { textPolicySampler } from '../src/rollout/text-policy-sampler.ts';
import { Rng } from '../src/util/random.ts';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const BATCH = Number(arg('batch', '16'));
const DELAY = Number(arg('step-delay-ms', '50'));
const ROUNDS = Number(arg('rounds', '3'));
const WORKERS = arg('workers', '1,2,4').split(',').map(Number);
const CRL = fileURLToPath(new URL('../bin/crl', import.meta.url));

const family = getFamily('chunk-sum');
const tokenizer = loadTokenizer('word');
let round = 0;
const jobs = () =>
  episodeJobs({ family, knobs: {}, batchEpisodes: BATCH, groupSize: 1, iteration: ++round, rng: new Rng(round) });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const quantile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;

async function inProcess(): Promise<{ seconds: number; steps: number }> {
  const { config, layout } = resolveRolloutConfig({ input: {}, tokenizer });
  const t0 = performance.now();
  const records = await runEpisodes({
    episodes: jobs().map((j) => episodeOfJob(j, (spec) => withStepDelay(createEnvironment(spec), DELAY))),
    config,
    layout,
    actor: textPolicySampler({ tokenizer, policy: family.expert, rng: new Rng(1) }),
    concurrency: 1,
  });
  return { seconds: (performance.now() - t0) / 1000, steps: records.reduce((a, r) => a + r.steps, 0) };
}

async function startWorkers(url: string, name: string, n: number, concurrency: number): Promise<ChildProcess[]> {
  return Promise.all(
    Array.from({ length: n }, () => {
      const child = spawn(
        process.execPath,
        [CRL, 'worker', '--queue', url, '--queue-name', name, '--concurrency', String(concurrency)],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      return new Promise<ChildProcess>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`crl worker exited with ${code}`)));
        createInterface({ input: child.stdout }).once('line', () => resolve(child));
      });
    }),
  );
}

function messages(): EpisodeMessageInput[] {
  const session = `round${round + 1}`;
  return jobs().map((job) => ({
    run: 'bench',
    session,
    job,
    tokenizer: { name: tokenizer.name, sha256: tokenizer.sha256 },
    rollout: {},
    sampler: { kind: 'expert' },
    stepDelayMs: DELAY,
  }));
}

const redis = await startRedis();
try {
  const rows: { setting: string; seconds: number; eps: number }[] = [];
  const local: number[] = [];
  let steps = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const out = await inProcess();
    local.push(out.seconds);
    steps = out.steps;
  }
  rows.push({ setting: 'in-process, 1 at a time', seconds: median(local), eps: BATCH / median(local) });
  for (const n of WORKERS) {
    const name = `bench-${n}`;
    const workers = await startWorkers(redis.url, name, n, 1);
    const queue = await EpisodeQueue.open({ url: redis.url, name, timeoutMs: 60_000 });
    await queue.runBatch({ messages: messages().slice(0, n), attempts: 1 }); // warm-up: the workers' first episodes compile
    const times: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      const out = await queue.runBatch({ messages: messages(), attempts: 1 });
      if (out.records.length !== BATCH) throw new Error(`got ${out.records.length} records of ${BATCH}`);
      times.push((performance.now() - t0) / 1000);
    }
    await queue.close();
    workers.forEach((w) => w.kill('SIGTERM'));
    rows.push({
      setting: `${n} worker(s), 1 episode each at a time`,
      seconds: median(times),
      eps: BATCH / median(times),
    });
  }

  // The queue's own latency per job: (a) one job at a time on one idle worker, nothing else
  // running; (b) the whole batch at once on 4 workers with a slot for every job.
  const latency = async (workers: number, slots: number, batches: number, size: number): Promise<number[]> => {
    const name = `bench-latency-${workers}x${slots}`;
    const procs = await startWorkers(redis.url, name, workers, slots);
    const queue = await EpisodeQueue.open({ url: redis.url, name, timeoutMs: 60_000 });
    await queue.runBatch({ messages: messages().slice(0, size), attempts: 1 }); // warm-up, not counted
    const out: number[] = [];
    for (let r = 0; r < batches; r++)
      out.push(...(await queue.runBatch({ messages: messages().slice(0, size), attempts: 1 })).queueMs);
    await queue.close();
    procs.forEach((w) => w.kill('SIGTERM'));
    return out;
  };
  const single = await latency(1, 1, 3 * ROUNDS * 4, 1);
  const slots = Math.max(1, Math.ceil(BATCH / 4));
  const lat = await latency(4, slots, ROUNDS, BATCH);

  const base = rows[1]!.eps;
  console.log(
    `\nbatch ${BATCH} chunk-sum episodes (scripted expert, ${steps} steps in all), --step-delay-ms ${DELAY}, median of ${ROUNDS} rounds\n`,
  );
  console.log('| setting | batch s | episodes/s | vs 1 worker |');
  console.log('|---|---:|---:|---:|');
  for (const r of rows)
    console.log(`| ${r.setting} | ${r.seconds.toFixed(2)} | ${r.eps.toFixed(2)} | ${(r.eps / base).toFixed(2)}x |`);
  const perEpisode = ((rows[1]!.seconds - rows[0]!.seconds) / BATCH) * 1000;
  console.log(
    `\nqueue overhead per episode, 1 worker against in-process (both one at a time): ${perEpisode.toFixed(1)} ms`,
  );
  const show = (xs: number[]) =>
    `median ${median(xs).toFixed(1)} ms, p90 ${quantile(xs, 0.9).toFixed(1)} ms (n=${xs.length})`;
  console.log(`queue latency per job (added -> record at the trainer, minus the episode's run time):`);
  console.log(`  one job at a time, 1 worker:                    ${show(single)}`);
  console.log(`  the whole batch at once, 4 workers x ${slots} slots: ${show(lat)}`);
  console.log(
    JSON.stringify({
      batch: BATCH,
      stepDelayMs: DELAY,
      rows,
      overheadPerEpisodeMs: perEpisode,
      singleJobLatencyMedianMs: median(single),
      singleJobLatencyP90Ms: quantile(single, 0.9),
      batchLatencyMedianMs: median(lat),
      batchLatencyP90Ms: quantile(lat, 0.9),
    }),
  );
} finally {
  await redis.stop();
}
