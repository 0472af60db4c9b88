// Builds `crl view`'s web app (src/view/web) into build/viewer/ at `npm install` time, after the
// native addon (docs/decisions/0022-viewer.md). Without Vite (an install that omitted dev
// dependencies) it says so and exits 0: everything but `crl view` works without the bundle.
import { buildViewer } from '../src/view/bundle.ts';

try {
  await import('vite');
} catch {
  process.stderr.write(
    'crl: vite is not installed; skipping the viewer build (crl view needs it: npm run build:viewer)\n',
  );
  process.exit(0);
}
const t0 = performance.now();
await buildViewer();
process.stderr.write(`crl: built the viewer (build/viewer) in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
