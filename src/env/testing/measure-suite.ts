import { pathToFileURL } from 'node:url';
import { BUILTIN_FAMILIES } from '../builtin.ts';
import { variantKnobs } from '../knobs.ts';
import { runExpertEpisodes, windowsUsed, type WriterChoice } from './runtime-episodes.ts';

/**
 * The task-suite sizing table of docs/tasks.md: for every family and variant, the scripted
 * expert's median windows (K = 8) and its pass rate at x1 / x4 with oracle, lossy(0.3) and null
 * summaries, through the real runtime at its default config. Markdown to stdout.
 *
 *   node --import tsx src/env/testing/measure-suite.ts [episodes=200]
 */
export async function measureSuite(episodes: number): Promise<string[]> {
  const rows = [
    '| family | variant | median windows | oracle x1 | oracle x4 | lossy(0.3) x4 | null x4 |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const family of BUILTIN_FAMILIES) {
    for (const variant of ['default', ...Object.keys(family.variants)]) {
      const knobs = variantKnobs(family, variant);
      const seeds = Array.from({ length: episodes }, (_, i) => family.evalSeeds.start + i);
      const pass = async (writer: WriterChoice, windows: number): Promise<string> => {
        const recs = await runExpertEpisodes({ family, knobs, seeds, writer, windows });
        return ((100 * recs.filter((r) => r.reward >= 1).length) / recs.length).toFixed(1);
      };
      const ws = (await runExpertEpisodes({ family, knobs, seeds, writer: 'oracle', windows: 8 }))
        .map(windowsUsed)
        .sort((a, b) => a - b);
      const median = (ws[Math.floor((episodes - 1) / 2)]! + ws[Math.floor(episodes / 2)]!) / 2;
      const cells = [
        await pass('oracle', 1),
        await pass('oracle', 4),
        await pass({ lossy: 0.3 }, 4),
        await pass('null', 4),
      ];
      rows.push(`| ${family.name} | ${variant} | ${median} | ${cells.join(' | ')} |`);
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
  for (const row of await measureSuite(n)) console.log(row);
}
