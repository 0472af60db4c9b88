import { pathToFileURL } from 'node:url';
import { BUILTIN_FAMILIES } from '../../env/builtin.ts';
import type { TaskFamily } from '../../env/family.ts';
import { TERMINAL_FAMILIES } from '../../env/builtin.ts';
import { variantKnobs } from '../../env/knobs.ts';
import { runExpertEpisodes, windowsUsed, type WriterChoice } from './runtime-episodes.ts';

/**
 * The task-suite sizing table of docs/tasks.md: for every family and variant, how many windows the
 * scripted expert needs (K = 8, oracle summaries: the share of tasks that fit 1, 2, 3 and 4 or more
 * windows) and its pass rate at x1 / x4 with oracle, lossy(0.3) and null summaries, through the real
 * runtime at its default config (C = 256), plus x1 at twice the context (C = 512, the window of the
 * 2x-context system, method §7). Markdown to stdout.
 *
 *   node --import tsx src/experiments/testing/measure-suite.ts [episodes=200] [--terminal] [--family NAME] [--variant NAME]
 *
 * --terminal measures the sandboxed families (shell-ledger, repo-repair) instead, in their own
 * tokenizer and at the rollout config they are sized for (TaskFamily.rollout), 16 sandboxes at a
 * time; --family keeps only the family of that name, --variant only that variant (default included).
 */
export async function measureSuite(
  episodes: number,
  families: readonly TaskFamily[] = BUILTIN_FAMILIES,
  onlyVariant?: string,
): Promise<string[]> {
  const rows = [
    '| family | variant | windows needed 1 / 2 / 3 / 4+ | oracle x1 | oracle x4 | lossy(0.3) x4 | null x4 | oracle x1 at 2C |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const pct = (k: number) => ((100 * k) / episodes).toFixed(1);
  for (const family of families) {
    const base = { ...family.rollout };
    const C = family.rollout?.contextWindow ?? 256;
    const concurrency = family.rollout ? 16 : undefined;
    const all = ['default', ...Object.keys(family.variants)];
    for (const variant of onlyVariant === undefined ? all : [onlyVariant]) {
      const knobs = variantKnobs(family, variant);
      const seeds = Array.from({ length: episodes }, (_, i) => family.evalSeeds.start + i);
      const pass = async (writer: WriterChoice, windows: number, contextWindow = C): Promise<string> => {
        const rollout = { ...base, contextWindow };
        const recs = await runExpertEpisodes({ family, knobs, seeds, writer, windows, rollout, concurrency });
        return pct(recs.filter((r) => r.reward >= 1).length);
      };
      const ws = (
        await runExpertEpisodes({ family, knobs, seeds, writer: 'oracle', windows: 8, rollout: base, concurrency })
      ).map(windowsUsed);
      const needed = [1, 2, 3].map((w) => ws.filter((x) => x === w).length).concat(ws.filter((x) => x >= 4).length);
      const cells = [
        needed.map(pct).join(' / '),
        await pass('oracle', 1),
        await pass('oracle', 4),
        await pass({ lossy: 0.3 }, 4),
        await pass('null', 4),
        await pass('oracle', 1, 2 * C),
      ];
      rows.push(`| ${family.name} | ${variant} | ${cells.join(' | ')} |`);
    }
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const n = Number(process.argv[2] ?? 200);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`episodes must be a positive integer, got ${process.argv[2]}`);
    process.exit(2);
  }
  const suite = process.argv.includes('--terminal') ? TERMINAL_FAMILIES : BUILTIN_FAMILIES;
  const at = process.argv.indexOf('--family');
  const only = at > 0 ? process.argv[at + 1] : undefined;
  const families = only === undefined ? suite : suite.filter((f) => f.name === only);
  if (families.length === 0) {
    console.error(`--family ${only}: not in this suite (${suite.map((f) => f.name).join(', ')})`);
    process.exit(2);
  }
  const v = process.argv.indexOf('--variant');
  for (const row of await measureSuite(n, families, v > 0 ? process.argv[v + 1] : undefined)) console.log(row);
}
