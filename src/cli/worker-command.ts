import type { Command } from 'commander';
import { z } from 'zod';
import { RolloutWorker } from '../experiments/rollout-worker.ts';
import { startQueueWorker } from '../queue/queue-worker.ts';
import { redactedUrl } from '../queue/redis-connection.ts';
import { CliError } from './errors.ts';

const WorkerFlagsSchema = z.object({
  queue: z.string().min(1),
  queueName: z.string().min(1),
  concurrency: z.coerce.number().int().min(1).max(1024),
  stepDelayMs: z.coerce.number().int().min(0).optional(),
});

/**
 * `crl worker`: a rollout worker (docs/distributed.md). It takes episode jobs from the Redis
 * queue that `crl train --queue` fills, runs each (the environment built from the job, the
 * sampler it names), and returns the record; it runs until Ctrl-C / SIGTERM, which lets the
 * episodes in hand finish (a second signal stops at once: their jobs go back to the queue).
 */
export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('run episode jobs from a crl train --queue run: a rollout worker, one of many')
    .requiredOption('--queue <url>', 'the redis:// URL of the queue the trainer fills (crl train --queue)')
    .option('--queue-name <name>', "the queue's name within Redis", 'crl-episodes')
    .option('--concurrency <n>', 'episodes this worker runs at once', '4')
    .option(
      '--step-delay-ms <n>',
      'every environment step waits this many ms first (an I/O-bound setting for throughput measurements; default: what the job says)',
    )
    .action(async (opts: Record<string, unknown>) => {
      const r = WorkerFlagsSchema.safeParse(opts);
      if (!r.success)
        throw new CliError(
          r.error.issues
            .map((i) => `--${String(i.path[0]).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${i.message}`)
            .join('; '),
        );
      const f = r.data;
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const episodes = new RolloutWorker({
        ...(f.stepDelayMs !== undefined ? { stepDelayMs: f.stepDelayMs } : {}),
        log,
      });
      let done = 0;
      let failed = 0;
      const { close, worker } = await startQueueWorker({
        url: f.queue,
        name: f.queueName,
        concurrency: f.concurrency,
        run: (message, signal) => episodes.run(message, signal),
        log,
        onStart: (e) => log(`crl worker: ${e.episodeId} started${e.attempt > 1 ? ` (attempt ${e.attempt})` : ''}`),
        onJob: (e) => {
          if (e.ok) done++;
          else failed++;
          const engines = episodes.describeEngines();
          log(
            `crl worker: ${e.episodeId} ${e.ok ? 'done' : `failed (${e.reason})`} in ${(e.ms / 1000).toFixed(1)} s; ${done} done, ${failed} failed${engines ? `; engines ${engines}` : ''}`,
          );
        },
      });
      process.stdout.write(
        `${JSON.stringify({ worker: worker.id, queue: redactedUrl(f.queue), name: f.queueName, concurrency: f.concurrency, pid: process.pid })}\n`,
      );
      log(
        `crl worker: taking episode jobs from ${redactedUrl(f.queue)} (queue ${f.queueName}), ${f.concurrency} at once; Ctrl-C stops`,
      );
      await new Promise<void>((resolve) => {
        let stopping = false;
        const stop = () => {
          if (stopping) process.exit(130); // the second signal: the jobs in hand return to the queue
          stopping = true;
          log('crl worker: finishing the episodes in hand (a second Ctrl-C stops at once)');
          void close().then(resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
    });
}
