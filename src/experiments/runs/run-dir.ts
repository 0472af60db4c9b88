import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RUN_FILES } from '../../report/run-files.ts';
import { ensureDir, writeFileAtomic } from '../../util/atomic-write.ts';
import { provenance, ProvenanceSchema, type Provenance } from '../../util/provenance.ts';

/** Paths of one run directory (layout: src/report/run-files.ts). */
export interface RunPaths {
  root: string;
  config: string;
  metrics: string;
  timing: string;
  samples: string;
  eval: string;
  report: string;
}

export function runPaths(root: string): RunPaths {
  const r = resolve(root);
  return {
    root: r,
    config: join(r, RUN_FILES.config),
    metrics: join(r, RUN_FILES.metrics),
    timing: join(r, RUN_FILES.timing),
    samples: join(r, RUN_FILES.samples),
    eval: join(r, RUN_FILES.eval),
    report: join(r, RUN_FILES.report),
  };
}

/** A fresh run directory name: <system>-<UTC timestamp>. */
export function newRunName(system: string, now = new Date()): string {
  return `${system}-${now.toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}`;
}

/**
 * Creates the run directory and writes the resolved config with its provenance ({ system, config,
 * provenance }: commit, command line, config hash; src/util/provenance.ts). `root` is the pipeline
 * directory whose paths the config hash names relatively. Refuses to reuse a directory that already
 * has a config: that is what --resume is for.
 */
export function createRunDir(options: {
  dir: string;
  system: string;
  config: unknown;
  root?: string;
  /** Who acts while training; stored only for the scripted expert, so that --resume keeps it. */
  actor?: 'policy' | 'expert';
}): RunPaths {
  const paths = runPaths(options.dir);
  if (existsSync(paths.config))
    throw new Error(
      `${paths.root} already holds a run; continue it with --resume ${paths.root} or choose another --out`,
    );
  for (const d of [paths.root, paths.samples, paths.eval]) ensureDir(d);
  const record = {
    system: options.system,
    ...(options.actor === 'expert' ? { actor: 'expert' } : {}),
    config: options.config,
    provenance: provenance(options.config, options.root),
  };
  writeFileAtomic(paths.config, `${JSON.stringify(record, null, 2)}\n`);
  return paths;
}

/**
 * Reads a run's stored { system, actor, config, provenance } (the config is validated by the
 * caller's schema; provenance is null for runs made before it was recorded; actor is 'policy'
 * unless the run was trained on the scripted expert's episodes).
 */
export function readRunConfig(dir: string): {
  paths: RunPaths;
  system: string;
  actor: 'policy' | 'expert';
  config: unknown;
  provenance: Provenance | null;
} {
  const paths = runPaths(dir);
  if (!existsSync(paths.config)) throw new Error(`${paths.root} is not a run directory (no ${RUN_FILES.config})`);
  const raw = JSON.parse(readFileSync(paths.config, 'utf8')) as {
    system?: unknown;
    actor?: unknown;
    config?: unknown;
    provenance?: unknown;
  };
  if (typeof raw.system !== 'string') throw new Error(`${paths.config}: missing "system"`);
  if (raw.actor !== undefined && raw.actor !== 'expert')
    throw new Error(`${paths.config}: "actor" must be "expert" when given`);
  const prov = ProvenanceSchema.safeParse(raw.provenance);
  return {
    paths,
    system: raw.system,
    actor: raw.actor === 'expert' ? 'expert' : 'policy',
    config: raw.config,
    provenance: prov.success ? prov.data : null,
  };
}

/** What a directory named as a new run's --out holds: nothing, an earlier run, or something else. */
export function runDirState(dir: string): 'absent' | 'empty' | 'run' | 'other' {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) return 'other';
    entries = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw e;
  }
  if (existsSync(join(dir, RUN_FILES.config))) return 'run';
  return entries.length === 0 ? 'empty' : 'other';
}
