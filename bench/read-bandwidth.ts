/**
 * The machine's read bandwidth in GB/s, as decode sees it: `threads` threads at once, each
 * comparing two equal buffers of its own (memcmp reads both and writes nothing), the best of
 * `rounds` rounds, each round timed from the moment every thread is told to start to the moment
 * the last one is done. Batch-1 decode reads its weights with every engine thread, so the limit
 * it is held against must be read the same way: one thread alone does not saturate the memory
 * system, and a one-thread probe made decode look faster than its limit (a share of 1.45).
 */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const a = Buffer.alloc(workerData.bytes, 1);
const b = Buffer.alloc(workerData.bytes, 1);
parentPort.on('message', (m) => {
  if (m === 'stop') return process.exit(0);
  if (a.compare(b) !== 0) throw new Error('unequal buffers');
  parentPort.postMessage('done');
});
parentPort.postMessage('ready');
`;

/** Read GB/s with `threads` threads, each reading 2 x `bytesPerThread` per round. */
export async function readBandwidthGbPerS(threads: number, bytesPerThread = 256 << 20, rounds = 5): Promise<number> {
  const half = bytesPerThread >> 1;
  const workers = Array.from(
    { length: threads },
    () => new Worker(WORKER, { eval: true, workerData: { bytes: half } }),
  );
  const next = (w: Worker) =>
    new Promise<void>((resolve, reject) => {
      w.once('message', () => resolve());
      w.once('error', reject);
    });
  try {
    await Promise.all(workers.map(next));
    let best = Infinity;
    for (let r = 0; r < rounds; r++) {
      const done = workers.map(next);
      const t = performance.now();
      for (const w of workers) w.postMessage('go');
      await Promise.all(done);
      best = Math.min(best, (performance.now() - t) / 1000);
    }
    return (threads * 2 * half) / best / 1e9;
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
