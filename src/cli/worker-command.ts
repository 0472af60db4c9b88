import { realpathSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { z } from 'zod';
import { RolloutWorker } from '../experiments/rollout-queue/rollout-worker.ts';
import { QUEUE_SECRET_ENV, queueSecretFromEnv } from '../queue/job-signature.ts';
import { refusedWhy } from '../queue/job-refusal.ts';
import { startQueueWorker } from '../queue/queue-worker.ts';
import { redactedUrl } from '../queue/redis-connection.ts';
import { CliError } from './errors.ts';

const WorkerFlagsSchema = z.object({
  queue: z.string().min(1),
  queueName: z.string().min(1),
  concurrency: z.coerce.number().int().min(1).max(1024),
  stepDelayMs: z.coerce.number().int().min(0).optional(),
  taskRoot: z.string().min(1).optional(),
  allowEngines: z
    .string()
    .min(1)
    .transform((s) => s.split(',').map((u) => u.trim()))
    .pipe(z.array(z.string().url('each URL must be a full http:// or https:// URL')).min(1))
    .optional(),
});

/**
 * `crl worker`: a rollout worker (docs/distributed.md). It takes episode jobs from the Redis
 * queue that `crl train --queue` fills, runs each (the environment built from the job, the
 * sampler it names), and returns the record; it runs until Ctrl-C / SIGTERM, which lets the
 * episodes in hand finish (a second signal stops at once: their jobs go back to the queue).
 * With CRL_QUEUE_SECRET it runs only jobs signed with it; it takes task folders only under
 * --task-root and, given --allow-engines, samples only on those engines (docs/distributed.md,
 * "Who chooses what a worker runs").
 */
export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description(
      'run episode jobs from a crl train --queue run: a rollout worker, one of many; with CRL_QUEUE_SECRET set (as on the trainer) it runs only jobs signed with it',
    )
    .requiredOption('--queue <url>', 'the redis:// URL of the queue the trainer fills (crl train --queue)')
    .option('--queue-name <name>', "the queue's name within Redis", 'crl-episodes')
    .option('--concurrency <n>', 'episodes this worker runs at once', '4')
    .option(
      '--step-delay-ms <n>',
      'every environment step waits this many ms first (an I/O-bound setting for throughput measurements; default: what the job says)',
    )
    .option(
      '--task-root <dir>',
      'run Harbor task folders only from under this folder (after resolving links); without it, jobs naming a task folder are refused',
    )
    .option(
      '--allow-engines <urls>',
      'sample only on these engine URLs (comma-separated); jobs naming another are refused (default: the engines each job names)',
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
      const taskRoot = f.taskRoot !== undefined ? taskRootPath(f.taskRoot) : undefined;
      const secret = queueSecretFromEnv();
      if (secret === null)
        log(
          `crl worker: warning: ${QUEUE_SECRET_ENV} is not set, so whoever can write to the queue chooses what this worker runs ` +
            `(${taskRoot ? `any task folder under ${taskRoot}` : 'any task family'}, ${f.allowEngines ? 'on the allowed engines' : 'sampling on any engine URL'}); ` +
            `set the trainer's ${QUEUE_SECRET_ENV} here to run only its jobs`,
        );
      const episodes = new RolloutWorker({
        ...(f.stepDelayMs !== undefined ? { stepDelayMs: f.stepDelayMs } : {}),
        ...(taskRoot !== undefined ? { taskRoot } : {}),
        ...(f.allowEngines ? { allowEngines: f.allowEngines } : {}),
        log,
      });
      let done = 0;
      let failed = 0;
      const { close, worker } = await startQueueWorker({
        url: f.queue,
        name: f.queueName,
        concurrency: f.concurrency,
        secret,
        admit: (message) => void episodes.admit(message),
        run: (message, signal) => episodes.run(message, signal),
        log,
        onStart: (e) => log(`crl worker: ${e.episodeId} started${e.attempt > 1 ? ` (attempt ${e.attempt})` : ''}`),
        onJob: (e) => {
          if (e.ok) done++;
          else failed++;
          const engines = episodes.describeEngines();
          log(
            `crl worker: ${e.episodeId} ${e.ok ? 'done' : refusedWhy(e.reason ?? '') !== null ? e.reason : `failed (${e.reason})`} in ${(e.ms / 1000).toFixed(1)} s; ${done} done, ${failed} failed${engines ? `; engines ${engines}` : ''}`,
          );
        },
      });
      process.stdout.write(
        `${JSON.stringify({ worker: worker.id, queue: redactedUrl(f.queue), name: f.queueName, concurrency: f.concurrency, pid: process.pid, signed: secret !== null, taskRoot: taskRoot ?? null })}\n`,
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

/** The real path of --task-root, which must be a folder. */
function taskRootPath(dir: string): string {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    throw new CliError(`--task-root ${dir}: no such folder; name the folder the task folders lie under`);
  }
  if (!statSync(real).isDirectory()) throw new CliError(`--task-root ${dir} is not a folder`);
  return real;
}
