import { existsSync, readFileSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { EvalResultSchema } from '../../eval/eval-result.ts';
import type { MixedNote } from '../../report/run-files.ts';
import { configDiff, configHash } from '../../util/provenance.ts';
import { learningConfig } from '../../config/train-config.ts';
import { readRunConfig } from './run-dir.ts';

/**
 * `crl reproduce` skips work already on disk. That is only right when the directory was made with
 * the config the preset asks for now; otherwise a table would silently pool runs of two configs.
 * The guard compares a run's stored config (an eval file's stored request) with the wanted one and
 * refuses a mismatch unless the user allows mixing, in which case the mismatch is recorded
 * (pipeline.json `mixed`) and the report marks the tables it touches.
 */
export class MixedRunError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MixedRunError';
  }
}

export interface ReuseGuard {
  /**
   * A run directory (SFT base or RL system) that may already exist. `parse` reads a stored config
   * with today's schema: a field added since, whose default is what runs did before it existed,
   * then compares equal instead of refusing every run made before it (a stored config the schema
   * no longer reads is compared as stored).
   */
  run(options: {
    dir: string;
    config: unknown;
    what: string;
    env: string;
    seed: number;
    system: string;
    parse?: (stored: unknown) => unknown;
  }): void;
  /** An evaluation file that may already exist; `request` is what evaluatePolicy records. */
  evalFile(options: { path: string; request: unknown; env: string; seed: number; system: string }): void;
}

export function createReuseGuard(options: {
  root: string;
  allowMixed: boolean;
  onMixed: (note: MixedNote) => void;
}): ReuseGuard {
  const root = resolve(options.root);
  const rel = (p: string) => relative(root, resolve(p)).split(sep).join('/');
  const mismatch = (o: {
    path: string;
    what: string;
    differs: string[];
    note: Omit<MixedNote, 'path' | 'differs'>;
  }) => {
    if (!options.allowMixed)
      throw new MixedRunError(
        `${rel(o.path)} was made with another config than this preset asks for (${o.what}):\n  ${o.differs.join('\n  ')}\n` +
          `Use another --out, remove that directory, or pass --allow-mixed to reuse it anyway (the report then marks every table that uses it as mixed).`,
      );
    options.onMixed({ path: rel(o.path), differs: o.differs, ...o.note });
  };
  return {
    run({ dir, config, what, env, seed, system, parse }) {
      let stored;
      try {
        stored = readRunConfig(dir);
      } catch {
        return; // no run there yet: it will be created with the wanted config
      }
      // Where the episodes ran (engines, a queue) is not what the run learned.
      const wanted = learningConfig(JSON.parse(JSON.stringify(config)));
      const have = learningConfig(JSON.parse(JSON.stringify(readWithSchema(stored.config, parse))));
      if (configHash(have, root) === configHash(wanted, root)) return;
      mismatch({
        path: dir,
        what,
        differs: configDiff({ stored: have, wanted, root }),
        note: { kind: 'run', env, seed, system },
      });
    },
    evalFile({ path, request, env, seed, system }) {
      if (!existsSync(path)) return;
      const parsed = EvalResultSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
      const wanted = JSON.parse(JSON.stringify(request)) as unknown;
      const stored = parsed.success ? parsed.data.request : undefined;
      if (stored !== undefined && configHash(stored, root) === configHash(wanted, root)) return;
      mismatch({
        path,
        what: 'evaluation',
        differs:
          stored === undefined
            ? ['(the file records no request: made before evaluations recorded their settings, or unreadable)']
            : configDiff({ stored, wanted, root }),
        note: { kind: 'eval', env, seed, system },
      });
    },
  };
}

function readWithSchema(stored: unknown, parse: ((stored: unknown) => unknown) | undefined): unknown {
  if (!parse) return stored;
  try {
    return parse(stored);
  } catch {
    return stored;
  }
}
