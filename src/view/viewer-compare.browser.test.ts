import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tinyCheckpoint } from '../adapters/testing/crl-serve.ts';
import { CRL_BIN } from '../cli/testing/spawn-crl.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { bundleStatus, buildViewer } from './bundle.ts';
import { haveChromium, launchChromium, startCrlView } from './testing/browser.ts';
import { makeTinyRun } from './testing/tiny-run.ts';

/**
 * `crl view` comparing runs, in a real headless Chromium: a pipeline directory laid out as
 * `crl reproduce` lays it out (runs under systems/, made by small real training runs), its curves
 * named by system and seed, picked by directory or one by one, overlaid on one chart; then a real
 * `crl train` process adds a run to the pipeline while the page stays open, and the page shows it
 * growing without a reload. Screenshots go to build/viewer-screenshots/.
 */
// The callbacks given to page.evaluate run in the page, where these exist; Node's types lack them.
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any, window: any;

const SHOTS = fileURLToPath(new URL('../../build/viewer-screenshots/', import.meta.url));
const required = process.env.CRL_REQUIRE_BROWSER === '1';
const available = haveChromium();
if (!available && !required)
  process.stderr.write('\nSKIPPING the crl view compare browser tests: /usr/bin/chromium is missing\n\n');

const PIPE = 'reproduce-quick-20261201T120000';
/** The success-rate chart of one chart group (a task family, or `all` when overlaid). */
const success = (group: string) =>
  `[data-testid="family-${group}"] [data-testid="curve"][data-metric="rollout/success_rate"]`;
const KV = success('kv-ledger');
const ALL = success('all');

/** The legend labels and the number of points drawn of one chart. */
async function chart(page: Page, selector: string): Promise<{ legend: string[]; drawn: number }> {
  return page.evaluate((sel) => {
    const el = document.querySelector(sel);
    if (!el) return { legend: [], drawn: 0 };
    const legend = [...el.querySelectorAll('.role-legend-label text')].map((t: any) => t.textContent);
    return { legend, drawn: Number(el.dataset.drawn ?? 0) };
  }, selector);
}

describe.runIf(available || required)('crl view compares runs in a real browser', () => {
  let root: string;
  let pipe: string;
  let ckpt: string;
  let view: { url: string; proc: ChildProcess };
  let browser: BrowserContext;
  let page: Page;
  let trainer: ChildProcess | undefined;

  beforeAll(async () => {
    if (required && !available) throw new Error('CRL_REQUIRE_BROWSER=1 but /usr/bin/chromium is missing');
    if (bundleStatus() !== 'fresh') await buildViewer();
    mkdirSync(SHOTS, { recursive: true });
    root = mkdtempSync(join(tmpdir(), 'crl-view-compare-'));
    pipe = join(root, PIPE);
    const systems = join(pipe, 'systems');
    for (const [system, env, seed] of [
      ['compaction-rl', 'kv-ledger', 0],
      ['compaction-rl', 'kv-ledger', 1],
      ['no-compaction', 'fog-courier', 0],
    ] as const)
      await makeTinyRun({ parent: systems, name: `${system}--${env}--s${seed}`, system, env, seed, iterations: 3 });
    ckpt = join(root, 'base');
    await tinyCheckpoint(ckpt, { seed: 1 });
    view = await startCrlView([pipe]);
    browser = await launchChromium();
    page = await browser.newPage();
    page.on('pageerror', (e) => {
      throw e;
    });
  });
  afterAll(async () => {
    trainer?.kill('SIGTERM');
    await browser?.close();
    view?.proc.kill('SIGTERM');
  });

  it('names curves by system and seed, picks runs by directory or one by one, and overlays them', async () => {
    await page.goto(`${view.url}#/runs`);
    await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.drawn === '6', KV);
    // By family: kv-ledger's chart holds its two seeds, named in full, never by the directory.
    expect((await chart(page, KV)).legend).toEqual(['compaction-rl · seed 0', 'compaction-rl · seed 1']);
    expect((await chart(page, success('fog-courier'))).legend).toEqual(['no-compaction · seed 0']);
    expect(await page.locator(`${KV} .mark-line path`).count()).toBe(2); // a line per run
    // One run off: its points leave the chart.
    await page.locator('[data-testid="pick-run-1"]').uncheck();
    await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.drawn === '3', KV);
    expect((await chart(page, KV)).legend).toEqual(['compaction-rl · seed 0']);
    // The pipeline's box, part-checked now: a click picks every run, the next drops every run.
    const group = page.locator(`[data-testid="pick-group-${PIPE}"]`);
    expect(await group.evaluate((el: any) => el.indeterminate)).toBe(true);
    await group.check();
    await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.drawn === '6', KV);
    await group.uncheck();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="curve"]').length === 0);
    await group.check();
    // Every picked run on one chart per metric, families named where they differ.
    await page.locator('[data-testid="layout"]').selectOption('overlay');
    await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.drawn === '9', ALL);
    expect(await page.locator('[data-testid="family-kv-ledger"]').count()).toBe(0);
    expect((await chart(page, ALL)).legend).toEqual([
      'compaction-rl · seed 0 · kv-ledger',
      'compaction-rl · seed 1 · kv-ledger',
      'no-compaction · seed 0 · fog-courier',
    ]);
    expect(await page.locator(`${ALL} .mark-line path`).count()).toBe(3);
    await page.screenshot({ path: join(SHOTS, 'compare.png') });
  });

  it(
    'follows a run that is still training: a new run of the pipeline appears and grows without a reload',
    { timeout: 300_000 },
    async () => {
      await page.evaluate(() => (window.notReloaded = true)); // gone if the page reloads
      const iterations = 8;
      const run = join(pipe, 'systems', 'compaction-rl--kv-ledger--s2');
      // Steps wait, so the run trains for several of the page's polls.
      const args = ['train', '--env', 'kv-ledger', '--actor', 'expert', '--batch', '4', '--seed', '2'];
      const more = ['--init', ckpt, '--iterations', String(iterations), '--step-delay-ms', '60', '--out', run];
      trainer = spawn(process.execPath, [CRL_BIN, ...args, ...more], { stdio: 'ignore' });
      const exited = new Promise<number | null>((ok) => trainer!.once('exit', ok));
      const seen = new Set<number>();
      const final = 9 + iterations;
      await waitFor(
        async () => {
          const { drawn } = await chart(page, ALL);
          seen.add(drawn);
          return drawn === final;
        },
        { what: `the success-rate chart to reach ${final} points`, timeoutMs: 240_000, intervalMs: 50 },
      );
      expect(await exited).toBe(0);
      expect(readMetrics(join(run, 'metrics.jsonl'))).toHaveLength(iterations);
      // It showed the run part-way, then more of it: the chart grew while the run trained.
      const partial = [...seen].filter((n) => n > 9 && n < final);
      expect(partial.length, `points seen: ${[...seen].join(', ')}`).toBeGreaterThan(0);
      expect((await chart(page, ALL)).legend).toContain('compaction-rl · seed 2 · kv-ledger');
      expect(await page.locator('[data-testid="pick-run-3"]').isChecked()).toBe(true);
      expect(await page.evaluate(() => window.notReloaded)).toBe(true);
      await page.screenshot({ path: join(SHOTS, 'live.png') });
    },
  );
});
