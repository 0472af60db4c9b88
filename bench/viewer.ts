/**
 * `crl view` speed in a real headless Chromium (Debian's, driven by playwright-core): first
 * contentful paint, the first episode rendered and all curves drawn after navigation, and the time
 * to switch between episodes, on a run of N iterations x M sampled episodes made by replicating the
 * files of a small real training run. Prints the figures and writes
 * build/viewer-screenshots/timings.json (with a screenshot). Targets (docs/viewer.md): first paint
 * under 1 s, episode switch under 200 ms; they are measured here, never asserted in tests.
 * Run: `npm run bench:viewer [-- --iterations 40 --episodes 16 --loads 3]`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { bundleStatus, buildViewer } from '../src/view/bundle.ts';
import { CHROMIUM, haveChromium, launchChromium, startCrlView } from '../src/view/testing/browser.ts';
import { replicateRun } from '../src/view/testing/replicate-run.ts';
import { makeTinyRun } from '../src/view/testing/tiny-run.ts';
import { parseBenchArgs } from './bench-args.ts';

// The callbacks given to page.evaluate run in the page, where these exist; Node's types lack them.
declare const document: { querySelector(s: string): unknown; querySelectorAll(s: string): { length: number } };
declare const location: { hash: string };
declare const window: unknown;
declare class MutationObserver {
  constructor(callback: () => void);
  observe(target: unknown, options: object): void;
}
declare const requestAnimationFrame: (callback: () => void) => void;

const int = z.coerce.number().int();
const args = parseBenchArgs(
  'bench:viewer',
  z.object({
    iterations: int.min(2).default(40),
    episodes: int.min(2).default(16),
    loads: int.positive().default(3),
  }),
);
if (!haveChromium()) {
  console.error(`bench:viewer: ${CHROMIUM} is missing (apt-get install -y chromium)`);
  process.exit(2);
}

const OUT = fileURLToPath(new URL('../build/viewer-screenshots/', import.meta.url));
const { iterations, episodes, loads: LOADS } = args;
const last = `it${iterations}`;
if (bundleStatus() !== 'fresh') await buildViewer(); // measure the web app as its sources are now
mkdirSync(OUT, { recursive: true });
const root = mkdtempSync(join(tmpdir(), 'crl-bench-viewer-'));
const small = await makeTinyRun({ parent: root, iterations: 3, evaluate: true });
const big = join(root, 'big-run');
replicateRun({ from: small, to: big, iterations, episodes });
const view = await startCrlView([big]);
const browser = await launchChromium();
try {
  const p = await browser.newPage();
  // Stamps, in page time, when the first episode and the last curve appear.
  await p.addInitScript(() => {
    const w = window as { crlMarks: Record<string, number> };
    w.crlMarks = {};
    new MutationObserver(() => {
      if (!w.crlMarks.episode && document.querySelector('[data-testid="episode"]'))
        w.crlMarks.episode = performance.now();
      if (!w.crlMarks.curves && document.querySelectorAll('[data-testid="curve"][data-drawn]').length >= 7)
        w.crlMarks.curves = performance.now();
    }).observe(document, { childList: true, subtree: true, attributes: true });
  });
  const loads: { fcp: number; episode: number }[] = [];
  for (let i = 0; i < LOADS; i++) {
    await p.goto('about:blank'); // a fresh document each time (a hash change alone would not reload)
    await p.goto(`${view.url}#/episodes/0/${iterations}/0`);
    await p.waitForSelector(`[data-testid="episode"][data-episode-id="${last}-ep0"]`);
    loads.push(
      await p.evaluate(() => ({
        fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
        episode: (window as { crlMarks: Record<string, number> }).crlMarks.episode ?? Number.NaN,
      })),
    );
  }
  const curves: number[] = [];
  for (let i = 0; i < LOADS; i++) {
    await p.goto('about:blank');
    await p.goto(`${view.url}#/runs`);
    await p.waitForFunction(() => (window as { crlMarks: Record<string, number> }).crlMarks.curves);
    curves.push(await p.evaluate(() => (window as { crlMarks: Record<string, number> }).crlMarks.curves!));
  }
  await p.goto(`${view.url}#/episodes/0/${iterations}/0`);
  await p.waitForSelector(`[data-testid="episode"][data-episode-id="${last}-ep0"]`);
  const switches: number[] = [];
  for (let k = 1; k < episodes; k++) {
    switches.push(
      await p.evaluate(
        async ({ k, iterations }) => {
          const t0 = performance.now();
          location.hash = `#/episodes/0/${iterations}/${k}`;
          while (!document.querySelector(`[data-episode-id="it${iterations}-ep${k}"]`))
            await new Promise<void>((r) => requestAnimationFrame(r));
          return performance.now() - t0;
        },
        { k, iterations },
      ),
    );
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const figures = {
    run: `${iterations} iterations x ${episodes} sampled episodes (replicated from a real tiny kv-ledger run)`,
    firstContentfulPaintMs: loads.map((x) => Math.round(x.fcp)),
    episodeRenderedAfterNavigationMs: loads.map((x) => Math.round(x.episode)),
    allCurvesDrawnAfterNavigationMs: curves.map((x) => Math.round(x)),
    episodeSwitchMs: { median: Math.round(median(switches)), max: Math.round(Math.max(...switches)) },
  };
  console.log(`crl view timings: ${JSON.stringify(figures)}`);
  writeFileSync(join(OUT, 'timings.json'), `${JSON.stringify(figures, null, 2)}\n`);
  await p.screenshot({ path: join(OUT, 'big-run-episode.png') });
} finally {
  await browser.close();
  view.proc.kill('SIGTERM');
  rmSync(root, { recursive: true, force: true });
}
