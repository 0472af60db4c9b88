import type { EvalResult } from '../eval/eval-result.ts';
import { shortVersion, type Provenance } from '../util/provenance.ts';
import { isEstimate, type TableCell } from './cells.ts';
import type { MixedNote } from './run-files.ts';

/**
 * The notes under each table: how many seeds its cells pool, and whether its inputs are mixed —
 * made by more than one commit, or reused by `crl reproduce --allow-mixed` although their config
 * differs from the preset's (docs/decisions/0016-results-statistics-provenance.md).
 */
export interface RunInfo {
  /** How the report names the run directory. */
  label: string;
  system: string;
  env?: string;
  seed?: number;
  provenance: Provenance | null;
}

export interface ProvenanceContext {
  runs: readonly RunInfo[];
  mixed: readonly MixedNote[];
}

interface TableLike {
  rows: readonly { cells: readonly TableCell[] }[];
}

export const MIXED = 'MIXED';

export function tableNotes(t: TableLike, p: ProvenanceContext | undefined): string[] {
  const cells = t.rows.flatMap((r) => r.cells).filter(isEstimate);
  const evals = [...new Set(cells.flatMap((c) => c.evals))];
  if (evals.length === 0) return [];
  return [seedNote(cells, evals), ...provenanceNotes(evals, p)];
}

function seedNote(cells: readonly Exclude<TableCell, null | 'n/a'>[], evals: readonly EvalResult[]): string {
  const seeds = [...new Set(evals.map((e) => e.seed).filter((s) => s !== undefined))].sort((a, b) => a - b);
  const counts = [...new Set(cells.map((c) => c.seeds))].sort((a, b) => a - b);
  const tasks = [...new Set(evals.map((e) => `${e.taskSeeds.length} tasks × ${e.samplesPerTask} samples`))];
  const which = seeds.length ? ` (${seeds.join(', ')})` : '';
  const per =
    counts.length === 1 ? `${counts[0]} seed${counts[0] === 1 ? '' : 's'}` : `${counts[0]} to ${counts.at(-1)} seeds`;
  return `Seeds: each cell pools ${per}${which}; ${tasks.join(' or ')} per seed and family.`;
}

function provenanceNotes(evals: readonly EvalResult[], p: ProvenanceContext | undefined): string[] {
  const notes: string[] = [];
  const versions = new Map<string, number>();
  const count = (v: string) => versions.set(v, (versions.get(v) ?? 0) + 1);
  let unknown = 0;
  for (const e of evals) {
    if (!e.provenance) unknown++;
    else count(shortVersion(e.provenance));
  }
  const keys = new Set(evals.map((e) => `${e.system}|${e.env}|${e.seed}`));
  for (const r of p?.runs ?? []) {
    const trained = keys.has(`${r.system}|${r.env}|${r.seed}`);
    const base = r.system === 'base' && evals.some((e) => e.env === r.env && e.seed === r.seed);
    if ((trained || base) && r.provenance) count(shortVersion(r.provenance));
  }
  if (versions.size > 1)
    notes.push(
      `${MIXED}: made by ${versions.size} versions of the code: ${[...versions].map(([v, n]) => `${v} (${n} files)`).join(', ')}.`,
    );
  else if (versions.size === 1) notes.push(`Code: ${[...versions.keys()][0]}.`);
  if (unknown > 0) notes.push(`${unknown} evaluation files record no commit (made before provenance was recorded).`);
  const mixed = (p?.mixed ?? []).filter((m) => evals.some((e) => e.env === m.env && e.seed === m.seed));
  if (mixed.length)
    notes.push(
      `${MIXED}: reused although made with another config (--allow-mixed): ${mixed.map((m) => `${m.path} (${m.differs.join('; ')})`).join(', ')}.`,
    );
  return notes;
}
