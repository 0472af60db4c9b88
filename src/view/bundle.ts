import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLE_DIR } from './server.ts';

/**
 * The web app is built at install time (docs/decisions/0022-viewer.md): `npm install` runs
 * scripts/build-viewer.ts after the native addon. The bundle records a hash of its sources, so a
 * viewer whose sources changed since (a developer's edit) says so instead of showing stale code.
 */
const WEB_DIR = fileURLToPath(new URL('./web/', import.meta.url));
const SHARED = [
  fileURLToPath(new URL('./api-schema.ts', import.meta.url)),
  fileURLToPath(new URL('./vite.config.ts', import.meta.url)),
  fileURLToPath(new URL('../report/figures.ts', import.meta.url)),
];
const STAMP = 'source-hash.txt';

function files(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      return statSync(p).isDirectory() ? files(p) : [p];
    });
}

/** Hash of everything the bundle is built from (the web app's sources and the shared schema). */
export function viewerSourceHash(): string {
  const h = createHash('sha256');
  for (const f of [...files(WEB_DIR).filter((f) => !f.endsWith('.test.ts')), ...SHARED]) {
    h.update(f.slice(f.lastIndexOf('/src/')));
    h.update(readFileSync(f));
  }
  return h.digest('hex').slice(0, 16);
}

export function bundleStatus(dir = BUNDLE_DIR): 'missing' | 'stale' | 'fresh' {
  if (!existsSync(join(dir, 'index.html'))) return 'missing';
  const stamp = join(dir, STAMP);
  return existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === viewerSourceHash() ? 'fresh' : 'stale';
}

/** Builds the web app with Vite into build/viewer/ (a few seconds) and stamps its source hash. */
export async function buildViewer(): Promise<void> {
  const { build } = await import('vite');
  await build({ configFile: fileURLToPath(new URL('./vite.config.ts', import.meta.url)) });
  writeFileSync(join(BUNDLE_DIR, STAMP), `${viewerSourceHash()}\n`);
}
