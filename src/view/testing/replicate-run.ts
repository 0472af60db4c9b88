import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { RUN_FILES } from '../../report/run-files.ts';
import { listSampleFiles, readSampleFile, sampleFileName } from '../../report/sample-files.ts';

/**
 * A run directory of a given size made from a real run's files: its sampled episodes and metrics
 * lines repeated over `iterations` x `episodes` (episode ids renumbered). For measuring the viewer
 * on a run as large as a long training run's samples without training one.
 */
export function replicateRun(options: { from: string; to: string; iterations: number; episodes: number }): void {
  const { from, to } = options;
  mkdirSync(join(to, RUN_FILES.samples), { recursive: true });
  copyFileSync(join(from, RUN_FILES.config), join(to, RUN_FILES.config));
  const pool = listSampleFiles(from).flatMap((f) => readSampleFile(f.path));
  const lines = readFileSync(join(from, RUN_FILES.metrics), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const metrics: string[] = [];
  for (let it = 1; it <= options.iterations; it++) {
    const line = JSON.parse(lines[(it - 1) % lines.length]!) as { iteration: number };
    metrics.push(JSON.stringify({ ...line, iteration: it }));
    const episodes = Array.from({ length: options.episodes }, (_, k) => {
      const e = pool[(it * options.episodes + k) % pool.length]!;
      return JSON.stringify({ ...e, iteration: it, record: { ...e.record, episodeId: `it${it}-ep${k}` } });
    });
    writeFileSync(join(to, RUN_FILES.samples, sampleFileName(it)), gzipSync(`${episodes.join('\n')}\n`));
  }
  writeFileSync(join(to, RUN_FILES.metrics), `${metrics.join('\n')}\n`);
}
