/**
 * Where the policy's credit goes across compaction boundaries (docs/results/table4-log.md): from the
 * per-token credit a training run saved for its sampled episodes (samples/*.episodes.jsonl.gz),
 * the mean advantage of each segment grouped by how many segments follow it in its episode (0 =
 * the last segment, where the reward arrives). Three numbers per group:
 *
 * - |A_hat|: the estimator's advantage before whitening (method §4; the cross-trajectory factor
 *   included), mean absolute value;
 * - |used|: the advantage the policy loss used (whitened over the batch), mean absolute value;
 * - signal: mean used advantage in episodes that succeeded minus in episodes that failed. Credit
 *   that tells good from bad episodes has a large signal; a uniform push (the whitening's mean
 *   shift applied to advantages near 0) has |used| but no signal.
 *
 *   node --import tsx bench/credit-by-position.ts RUN_DIR... [--from N] [--pool]
 *
 * --from N skips iterations before N (the critic warm-up has no policy update and is always
 * skipped). --pool counts the runs together (the seeds of one system) in one table instead of
 * one table per run. Markdown to stdout.
 */
import { basename } from 'node:path';
import { listSampleFiles, readSampleFile } from '../src/report/sample-files.ts';

interface Acc {
  tokens: number;
  absA: number;
  absUsed: number;
  win: number[];
  lose: number[];
}

const args = process.argv.slice(2);
const fromIdx = args.indexOf('--from');
const from = fromIdx >= 0 ? Number(args[fromIdx + 1]) : 1;
const pool = args.includes('--pool');
const runs = args.filter((a, i) => !a.startsWith('--') && (fromIdx < 0 || i !== fromIdx + 1));
if (runs.length === 0 || !Number.isInteger(from)) {
  console.error('usage: node --import tsx bench/credit-by-position.ts RUN_DIR... [--from N] [--pool]');
  process.exit(2);
}
/** Tables to print: each run alone, or (--pool) every run together, named without its seed. */
const tables: { label: string; dirs: string[] }[] = pool
  ? [{ label: `${basename(runs[0]!).replace(/--s\d+$/, '')} (${runs.length} runs)`, dirs: runs }]
  : runs.map((r) => ({ label: basename(r), dirs: [r] }));

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '–');

console.log(
  '| run | episode | segment | segments after it | tokens | mean abs A_hat | mean abs used | signal (won − lost) |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const table of tables) {
  const groups = new Map<string, Acc>();
  for (const f of table.dirs.flatMap((d) => listSampleFiles(d))) {
    if (f.iteration < from) continue;
    for (const e of readSampleFile(f.path)) {
      if (!e.credit.policyUpdated) continue;
      const segs = e.record.segments;
      const won = e.record.reward >= 1;
      const kind = e.record.compactions === 0 ? 'one window' : `${e.record.compactions + 1} windows`;
      e.credit.segments.forEach((c, i) => {
        if (c.used === null) return;
        const after = Math.min(segs.length - 1 - i, 4);
        const key = `${kind}\u0000${segs[i]!.kind}\u0000${after === 4 ? '4+' : after}`;
        const g = groups.get(key) ?? { tokens: 0, absA: 0, absUsed: 0, win: [], lose: [] };
        c.used.forEach((u, t) => {
          g.tokens++;
          g.absA += Math.abs(c.advantage[t]!);
          g.absUsed += Math.abs(u);
          (won ? g.win : g.lose).push(u);
        });
        groups.set(key, g);
      });
    }
  }
  for (const key of [...groups.keys()].sort()) {
    const g = groups.get(key)!;
    const [kind, seg, after] = key.split('\u0000');
    const signal = mean(g.win) - mean(g.lose);
    console.log(
      `| ${table.label} | ${kind} | ${seg} | ${after} | ${g.tokens} | ${fmt(g.absA / g.tokens)} | ${fmt(g.absUsed / g.tokens)} | ${fmt(signal)} |`,
    );
  }
}
