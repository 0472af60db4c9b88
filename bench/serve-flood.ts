/**
 * crl serve under a flood of large request bodies: N clients each POST B bytes to
 * /v1/completions at once while one client polls /health. Prints the slowest /health answer,
 * the statuses the flood got, and the server's peak RSS (VmHWM). Usage:
 *   npm run bench:serve-flood -- [--clients 10] [--mb 7] [--ids 1]
 * --ids 1 sends the prompt as token ids (a JSON array that costs far more to parse than a string).
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rawRequest, startServe, tinyCheckpoint } from '../src/adapters/testing/crl-serve.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const clients = arg('clients', 10);
const bytes = Math.round(arg('mb', 7) * (1 << 20));

const dir = join(mkdtempSync(join(tmpdir(), 'crl-flood-')), 'ckpt');
await tinyCheckpoint(dir, { seed: 1 });
const server = await startServe(['--policy', dir]);
const peakRss = () => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};
const rssBefore = peakRss();
let worstHealthMs = 0;
let polling = true;
const poll = (async () => {
  while (polling) {
    const t0 = performance.now();
    await fetch(`${server.url}/health`);
    worstHealthMs = Math.max(worstHealthMs, performance.now() - t0);
    await new Promise((r) => setTimeout(r, 20));
  }
})();
// A JSON body of about the declared size: one long prompt string, or token ids ("1," is 2 bytes).
const prompt = arg('ids', 0)
  ? Array.from({ length: Math.floor(bytes / 2) }, () => 1)
  : 'x'.repeat(Math.max(0, bytes - 20));
const body = Buffer.from(JSON.stringify({ prompt, max_tokens: 1 }));
const t0 = performance.now();
const statuses = await Promise.all(
  Array.from({ length: clients }, () =>
    rawRequest({
      port: server.port,
      method: 'POST',
      path: '/v1/completions',
      headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
      body,
    }).response.then(
      (r) => r.status,
      (e: Error) => e.message,
    ),
  ),
);
const floodMs = performance.now() - t0;
await new Promise((r) => setTimeout(r, 200));
polling = false;
await poll;
console.log(
  JSON.stringify({
    clients,
    bodyMiB: +(body.length / (1 << 20)).toFixed(2),
    statuses: Object.fromEntries([...new Set(statuses)].map((s) => [s, statuses.filter((x) => x === s).length])),
    floodMs: Math.round(floodMs),
    worstHealthMs: Math.round(worstHealthMs),
    peakRssMiB: { before: Math.round(rssBefore), after: Math.round(peakRss()) },
  }),
);
server.stop();
