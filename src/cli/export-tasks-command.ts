import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { z } from 'zod';
import { CliError } from './errors.ts';
import { parseKnobsFlag } from './json-flag.ts';
import { evalTaskSeeds } from '../experiments/evaluate/eval-runner.ts';
import { checkTask } from './load-envs.ts';
import { addContainerFiles, ImageRefSchema } from '../env/harbor/container-files.ts';

const int = (min: number) =>
  z.coerce.number({ error: 'expected a whole number' }).int({ error: 'expected a whole number' }).min(min);

const FlagsSchema = z
  .object({
    env: z.string().min(1),
    episodes: int(1).optional(),
    count: int(1).optional(),
    seed: int(0).default(0),
    split: z.enum(['eval', 'train']).default('eval'),
    knobs: z.string().optional(),
    out: z.string().min(1),
    dockerImage: ImageRefSchema.optional(),
  })
  .strict();

/**
 * `crl export-tasks`: writes a generated family's tasks as Harbor task folders (docs/harbor.md),
 * one folder per task, so they run with `crl run --env harbor:DIR` (or in Harbor itself, given an
 * environment/Dockerfile: `--docker-image IMAGE` writes one FROM that image, env/harbor/container-files.ts).
 */
export function registerExportTasksCommand(program: Command): void {
  program
    .command('export-tasks')
    .description('write a generated task family as Harbor task folders (run them with crl run --env harbor:DIR)')
    .requiredOption('--env <name>', 'a task family that can write task folders (shell-ledger, repo-repair)')
    .option('--count <n>', 'number of tasks (default 20)')
    .option('--episodes <n>', 'number of tasks, as --count (the flag crl run and crl eval use)')
    .option('--seed <s>', 'offset into the seed range', '0')
    .option('--split <eval|train>', "seed range: the family's evaluation or training seeds", 'eval')
    .option('--knobs <json>', 'task knobs as JSON (default: the family defaults)')
    .requiredOption('--out <dir>', 'a new or empty directory for the task folders')
    .option(
      '--docker-image <image>',
      "also write environment/Dockerfile FROM this image (it must hold the task's tools: python3 and pytest for repo-repair) and a setup.sh for bubblewrap",
    )
    .action((opts: Record<string, unknown>) => {
      const parsed = FlagsSchema.safeParse(opts);
      if (!parsed.success) {
        const flag = (key: unknown) => String(key).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
        throw new CliError(parsed.error.issues.map((i) => `--${flag(i.path[0])}: ${i.message}`).join('\n'));
      }
      const f = parsed.data;
      if (f.count !== undefined && f.episodes !== undefined && f.count !== f.episodes) {
        throw new CliError(`--count ${f.count} and --episodes ${f.episodes} disagree; give one of them`);
      }
      const count = f.count ?? f.episodes ?? 20;
      const given = parseKnobsFlag(f.knobs);
      const family = checkTask({ env: f.env, knobs: given }); // a bad --env or --knobs is a user error
      if (!family.writeTaskFolder) {
        throw new CliError(`--env ${f.env}: this family runs in-process and has no task folders to write`);
      }
      const out = resolve(f.out);
      if (existsSync(out) && readdirSync(out).length > 0) {
        throw new CliError(`--out ${f.out} exists and is not empty; choose a new directory`);
      }
      let knobs: Record<string, unknown>;
      try {
        knobs = family.knobs.parse(given);
      } catch (e) {
        throw new CliError(`--knobs: ${(e as Error).message}`);
      }
      const range = f.split === 'eval' ? family.evalSeeds : family.trainSeeds;
      const seeds = evalTaskSeeds({ evalSeeds: range }, { tasks: count, offset: f.seed });
      mkdirSync(out, { recursive: true });
      for (const seed of seeds) {
        const dir = join(out, `${family.name}-${seed}`);
        family.writeTaskFolder({ seed, knobs, dir });
        if (f.dockerImage !== undefined) addContainerFiles(dir, f.dockerImage);
      }
      process.stderr.write(`crl: wrote ${seeds.length} task folders to ${f.out}\n`);
      process.stdout.write(JSON.stringify({ tasks: seeds.length, out: f.out }) + '\n');
    });
}
