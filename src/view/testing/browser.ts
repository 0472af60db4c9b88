import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's chromium (apt-get install chromium); the tests never download a browser. */
export const CHROMIUM = '/usr/bin/chromium';

export function haveChromium(): boolean {
  return existsSync(CHROMIUM);
}

/** Headless Chromium with a fresh profile, no network side channels, no sandbox (CI runs as root). */
export async function launchChromium(): Promise<BrowserContext> {
  return chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'crl-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

const CRL = fileURLToPath(new URL('../../../bin/crl', import.meta.url));

/** Starts the real `crl view` process on a free port; resolves with its URL once it listens. */
export function startCrlView(args: readonly string[]): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(CRL, ['view', ...args, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((ok, fail) => {
    let out = '';
    let err = '';
    proc.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) ok({ url: (JSON.parse(line) as { url: string }).url, proc });
    });
    proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
    proc.on('exit', (code) => fail(new Error(`crl view exited with ${code}: ${err}`)));
  });
}
