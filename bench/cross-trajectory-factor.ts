/**
 * Size of the cross-trajectory GAE factor (method §4) on real episodes: for every segment of every
 * episode in a `crl run` JSONL, the factor (gamma * lambda_s)^N_after with the length-adaptive
 * lambda_s = 1 - 1/(alpha * n_s) and gamma = 1 (the TrainConfig defaults), averaged by segment index.
 * It says how much smaller the policy advantage of an early segment (e.g. the first summary) is
 * than without the correction (docs/results/README.md, the kv-ledger-only `full` run).
 *
 *   bin/crl run --env kv-ledger --policy RUN_DIR --episodes 16 --out runs/eps.jsonl
 *   node --import tsx bench/cross-trajectory-factor.ts runs/eps.jsonl [alpha=1.5]
 */
import { readFileSync } from 'node:fs';

interface Segment {
  kind: string;
  lossMask: number[];
}

const [file, alphaArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node --import tsx bench/cross-trajectory-factor.ts EPISODES.jsonl [alpha]');
  process.exit(2);
}
const alpha = Number(alphaArg ?? 1.5);
const byIndex = new Map<string, number[]>();
for (const line of readFileSync(file, 'utf8').trim().split('\n')) {
  const { segments } = JSON.parse(line) as { segments: Segment[] };
  const n = segments.map((s) => s.lossMask.reduce((a, b) => a + b, 0));
  segments.forEach((s, i) => {
    const after = n.slice(i + 1).reduce((a, b) => a + b, 0);
    const factor = n[i]! > 0 ? Math.pow(1 - 1 / (alpha * n[i]!), after) : 1;
    const key = `${i} ${s.kind}`;
    byIndex.set(key, [...(byIndex.get(key) ?? []), factor]);
  });
}
const rows = [...byIndex].sort(([a], [b]) => Number(a.split(' ')[0]) - Number(b.split(' ')[0]));
for (const [key, fs] of rows) {
  const mean = fs.reduce((a, b) => a + b, 0) / fs.length;
  console.log(
    `segment ${key.padEnd(14)} episodes ${String(fs.length).padStart(3)}  mean factor ${mean.toFixed(3)}  min ${Math.min(...fs).toFixed(3)}`,
  );
}
console.log(JSON.stringify(Object.fromEntries(rows.map(([k, fs]) => [k, fs.reduce((a, b) => a + b, 0) / fs.length]))));
