/**
 * Why repo-repair episodes fail (docs/results/README.md): reads the sampled episodes a training run
 * rendered as text (`<run>/samples/iter-NNNNNN.txt`, two episodes per iteration by default) and
 * sorts each by what its first edit did, against the failing test's comment (`# f(a, b) should
 * return E`) and the numbered `def f(` line a read showed before the edit:
 *
 * - the edit came before any read showed `def f(` (the line was guessed);
 * - the def was read, and the edit's line (the def's next line) and expression were right or wrong;
 * - no edit, no failing test read, or an edit not of the form the task asks for.
 *
 * Reads count in whichever window they happened, so a def read before a compaction counts as read.
 *
 *   node --import tsx bench/repo-repair-failures.ts RUN_DIR...
 *
 * One markdown table to stdout: each category's count among failed and among successful episodes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const EDIT = /^assistant {3}sed -i '(\d+)s\/\.\*\/ {4}return (.*)\/' /m;

function category(episode: string): string {
  const spec = /# (\w+)\(a, b\) should return ([^\n]*)/.exec(episode);
  const at = episode.indexOf("assistant   sed -i '");
  if (at < 0) return 'no edit';
  if (!spec) return 'edit before the failing test was read';
  const [, fn, expected] = spec;
  const def = new RegExp(`(\\d+)\\tdef ${fn}\\(`).exec(episode.slice(0, at));
  if (!def) return 'edit before the def was read';
  const edit = EDIT.exec(episode.slice(at));
  if (!edit) return 'edit not of the asked form';
  const line = Number(edit[1]) === Number(def[1]) + 1 ? 'right' : 'wrong';
  const expr = edit[2]!.trim() === expected!.trim() ? 'right' : 'wrong';
  return `def read; line ${line}, expression ${expr}`;
}

const runs = process.argv.slice(2);
if (runs.length === 0) {
  process.stderr.write('usage: node --import tsx bench/repo-repair-failures.ts RUN_DIR...\n');
  process.exit(2);
}
const counts = new Map<string, { failure: number; success: number }>();
let episodes = 0;
for (const run of runs) {
  const dir = join(run, 'samples');
  for (const file of readdirSync(dir).filter((f) => /^iter-\d+\.txt$/.test(f))) {
    for (const ep of readFileSync(join(dir, file), 'utf8').split(/\n(?=episode \S+ {2}env )/)) {
      const outcome = /outcome (success|failure)/.exec(ep.slice(0, 300))?.[1] as 'success' | 'failure' | undefined;
      if (!outcome) continue;
      episodes++;
      const c = category(ep);
      const row = counts.get(c) ?? { failure: 0, success: 0 };
      row[outcome]++;
      counts.set(c, row);
    }
  }
}
const total = { failure: 0, success: 0 };
for (const r of counts.values()) {
  total.failure += r.failure;
  total.success += r.success;
}
const pct = (n: number, of: number) => (of === 0 ? '—' : `${((100 * n) / of).toFixed(1)}%`);
process.stdout.write(`${episodes} sampled episodes of ${runs.length} run(s)\n\n`);
process.stdout.write('| first edit | failed | % of failed | succeeded |\n|---|---|---|---|\n');
for (const [c, r] of [...counts].sort((a, b) => b[1].failure - a[1].failure))
  process.stdout.write(`| ${c} | ${r.failure} | ${pct(r.failure, total.failure)} | ${r.success} |\n`);
