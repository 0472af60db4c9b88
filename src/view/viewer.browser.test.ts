import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEvalResult } from '../eval/eval-result.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { listSampleFiles, readSampleFile, type SampledEpisode } from '../report/sample-files.ts';
import { bundleStatus, buildViewer } from './bundle.ts';
import { haveChromium, launchChromium, startCrlView } from './testing/browser.ts';
import { makeTinyRun } from './testing/tiny-run.ts';

/**
 * `crl view` in a real headless Chromium (Debian's, driven by playwright-core) over a run directory
 * made by a small real training run. Screenshots of each view go to build/viewer-screenshots/ for
 * people to look at. Speed is measured by bench/viewer.ts (`npm run bench:viewer`), not here.
 */
// The callbacks given to page.evaluate run in the page, where these exist; Node's types lack them.
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any, location: any, getComputedStyle: any;

const SHOTS = fileURLToPath(new URL('../../build/viewer-screenshots/', import.meta.url));
const required = process.env.CRL_REQUIRE_BROWSER === '1';
const available = haveChromium();
if (!available) {
  const msg = required
    ? 'CRL_REQUIRE_BROWSER=1 but /usr/bin/chromium is missing (apt-get install -y chromium)'
    : 'SKIPPING the crl view browser tests: /usr/bin/chromium is missing (apt-get install -y chromium)';
  process.stderr.write(`\n${'!'.repeat(100)}\n${msg}\n${'!'.repeat(100)}\n\n`);
}

function rgba(css: string): [number, number, number, number] {
  const m = /rgba?\(([^)]+)\)/.exec(css);
  const p = (m?.[1] ?? '0,0,0,0').split(',').map((x) => Number(x.trim()));
  return [p[0]!, p[1]!, p[2]!, p[3] ?? 1];
}

async function waitHash(page: Page, re: RegExp): Promise<string> {
  await page.waitForFunction((src) => new RegExp(src).test(location.hash), re.source);
  return page.evaluate(() => location.hash);
}

describe.runIf(available || required)('crl view in a real browser', () => {
  let root: string;
  let run: string;
  let view: { url: string; proc: ChildProcess };
  let browser: BrowserContext;
  let page: Page;
  let saved: SampledEpisode[];

  beforeAll(async () => {
    if (required && !available) throw new Error('CRL_REQUIRE_BROWSER=1 but /usr/bin/chromium is missing');
    if (bundleStatus() !== 'fresh') await buildViewer(); // test the web app as its sources are now
    mkdirSync(SHOTS, { recursive: true });
    root = mkdtempSync(join(tmpdir(), 'crl-view-browser-'));
    run = await makeTinyRun({ parent: root, iterations: 3, evaluate: true });
    saved = readSampleFile(listSampleFiles(run)[1]!.path); // iteration 2: the policy trained on it
    view = await startCrlView([run]);
    browser = await launchChromium();
    page = await browser.newPage();
    page.on('pageerror', (e) => {
      throw e;
    });
  });
  afterAll(async () => {
    await browser?.close();
    view?.proc.kill('SIGTERM');
  });

  it('draws the training curves, and a point links to its iteration', async () => {
    await page.goto(`${view.url}#/runs`);
    await page.waitForSelector('[data-testid="curve"][data-drawn]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="curve"][data-drawn]').length >= 7);
    const success = page.locator('[data-testid="curve"][data-metric="rollout/success_rate"]');
    expect(await success.getAttribute('data-drawn')).toBe('3');
    const line = await success.locator('.mark-line path').first().getAttribute('d');
    expect(line?.length ?? 0).toBeGreaterThan(10); // a drawn line, not an empty mark
    // Zoom: the wheel over a chart narrows its iteration axis (the x scale is bound to a selection).
    const entropy = page.locator('[data-testid="curve"][data-metric="policy/entropy"]');
    const ticks = () => entropy.locator('.role-axis-label text').allTextContents();
    const before = await ticks();
    const box = (await entropy.locator('svg').boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -400);
    await page.waitForFunction(
      (b) =>
        JSON.stringify(
          [...document.querySelectorAll('[data-metric="policy/entropy"] .role-axis-label text')].map(
            (t: any) => t.textContent,
          ),
        ) !== b,
      JSON.stringify(before),
    );
    expect(await ticks()).not.toEqual(before);
    const points = success.locator('.mark-symbol.role-mark path');
    expect(await points.count()).toBe(3); // one point per iteration
    // The evaluation table: the run's own eval file, Pass@1 in percent with its interval.
    const evalResult = readEvalResult(join(run, 'eval', 'kv-ledger-default-self.json'));
    const cells = await page.locator('[data-testid="eval-table"] tbody tr').first().locator('td').allTextContents();
    const pct = (x: number) => (100 * x).toFixed(1);
    const x4 = evalResult.modes.x4!;
    expect(cells.slice(0, 4)).toEqual(['compaction-rl', 'kv-ledger', 'default', 'self']);
    expect(cells).toContain(`${pct(x4.passAt1)} [${pct(x4.low)}, ${pct(x4.high)}]`);
    await page.screenshot({ path: join(SHOTS, 'runs.png') });
    // Picking runs: unchecking the only run empties its family's panels; checking it draws them again.
    await page.locator('[data-testid="pick-run-0"]').uncheck();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="curve"]').length === 0);
    await page.locator('[data-testid="pick-run-0"]').check();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="curve"][data-drawn]').length >= 7);
    await points.nth(1).click({ force: true });
    expect(await waitHash(page, /^#\/episodes\/0\/2\//)).toMatch(/^#\/episodes\/0\/2\/0/);
  });

  it('lists episodes, opens one as segments, and shows the decoded summaries', async () => {
    await page.goto(`${view.url}#/episodes/0/2/1`);
    await page.waitForSelector('[data-testid="episode"][data-episode-id="it2-ep1"]');
    const items = page.locator('[data-testid="episode-list"] [data-episode]');
    expect(await items.count()).toBe(saved.length);
    const record = saved[1]!.record;
    const kinds = await page
      .locator('[data-testid="timeline"] [data-segment]')
      .evaluateAll((els) => els.map((e) => (e as any).dataset.kind));
    expect(kinds).toEqual(record.segments.map((s) => s.kind));
    expect(record.compactions).toBeGreaterThan(0);
    const tok = new WordTokenizer();
    const expected = record.segments
      .filter((s) => s.kind === 'summary')
      .map((s) => tok.decode(s.tokens.filter((_, t) => s.lossMask[t] === 1).slice(0, -1)));
    expect(await page.locator('[data-testid="summary-text"]').allTextContents()).toEqual(expected);
    expect(await page.locator('[data-testid="facts"] .fact').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(SHOTS, 'episode.png') });
    // Switching episodes from the list.
    await items.nth(2).click();
    await page.waitForSelector('[data-testid="episode"][data-episode-id="it2-ep2"]');
  });

  it('colours every generated token by the advantage the update used', async () => {
    await page.goto(`${view.url}#/episodes/0/2/1?mode=credit&metric=used`);
    await page.waitForSelector('[data-testid="episode"][data-episode-id="it2-ep1"] [data-testid="legend"]');
    const credit = saved[1]!.credit;
    expect(credit.policyUpdated).toBe(true);
    const tokens = await page
      .locator('[data-testid="episode"] span.tok[data-gen="1"]')
      .evaluateAll((els) =>
        els.map((e) => ({ v: Number((e as any).dataset.value), bg: getComputedStyle(e).backgroundColor })),
      );
    // DOM order is segment order (each window, then its summary): the saved values, token by token.
    const used = credit.segments.flatMap((c) => c.used ?? []);
    expect(tokens.map((t) => t.v)).toEqual(used);
    const maxAbs = Math.max(...used.map(Math.abs));
    for (const t of tokens) {
      const [r, g, , a] = rgba(t.bg);
      if (t.v > 0) expect(g).toBeGreaterThan(r); // green: credit
      if (t.v < 0) expect(r).toBeGreaterThan(g); // red: blame
      expect(a).toBeCloseTo(0.08 + (0.8 * Math.abs(t.v)) / maxAbs, 2); // opacity linear in |A| / max |A|
    }
    expect(new Set(tokens.map((t) => Math.sign(t.v))).size).toBeGreaterThan(1); // both signs occur
    await page.screenshot({ path: join(SHOTS, 'credit.png') });
  });
});
