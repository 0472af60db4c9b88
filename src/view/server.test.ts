import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { listSampleFiles, readSampleFile } from '../report/sample-files.ts';
import { recordsToJsonl } from '../rollout/record.ts';
import {
  EpisodeListResponseSchema,
  EpisodeViewSchema,
  MetricsResponseSchema,
  SourcesResponseSchema,
} from './api-schema.ts';
import { startViewServer, type ViewServer } from './server.ts';
import { makeTinyRun } from './testing/tiny-run.ts';

/** A raw GET: the path goes on the wire exactly as written (no URL normalization by the client). */
function get(url: string, path: string, headers: Record<string, string> = {}, method = 'GET') {
  const u = new URL(url);
  return new Promise<{ status: number; body: string }>((ok, fail) => {
    const req = request({ host: u.hostname, port: u.port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

describe('crl view server', () => {
  let root: string;
  let run: string;
  let records: string;
  let view: ViewServer;
  const SECRET = 'secret-outside-the-given-directories';

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'crl-view-'));
    run = await makeTinyRun({ parent: root, iterations: 2 });
    // Episode records as `crl run --out` writes them (the run's own sampled records).
    records = join(root, 'episodes.jsonl');
    writeFileSync(records, recordsToJsonl(readSampleFile(listSampleFiles(run)[0]!.path).map((e) => e.record)));
    writeFileSync(join(root, 'secret.txt'), SECRET);
    mkdirSync(join(root, 'private'));
    writeFileSync(join(root, 'private', 'secret.txt'), SECRET);
    symlinkSync(join(root, 'secret.txt'), join(run, 'link-to-secret.txt'));
    symlinkSync(join(root, 'private'), join(run, 'link-to-private'));
    const bundle = join(root, 'bundle');
    mkdirSync(join(bundle, 'assets'), { recursive: true });
    writeFileSync(join(bundle, 'index.html'), '<!doctype html><title>bundle</title>');
    writeFileSync(join(bundle, 'assets', 'app.js'), 'console.log(1)');
    view = await startViewServer({ inputs: [run, records], port: 0, bundleDir: bundle });
  });
  afterAll(async () => view?.close());

  it('listens on 127.0.0.1 only', () => {
    const addr = view.server.address();
    expect(typeof addr === 'object' && addr?.address).toBe('127.0.0.1');
    expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it('serves runs, curves, episode lists and episodes that match their schemas and the records', async () => {
    const sources = SourcesResponseSchema.parse(JSON.parse((await get(view.url, '/api/sources')).body));
    expect(sources.sources.map((s) => [s.kind, s.env, s.iterations])).toEqual([
      ['run', 'kv-ledger', [1, 2]],
      ['records', 'kv-ledger', [0]],
    ]);
    const metrics = MetricsResponseSchema.parse(JSON.parse((await get(view.url, '/api/sources/0/metrics')).body));
    expect(metrics.series['rollout/success_rate']!.map(([it]) => it)).toEqual([1, 2]);
    // The wall-clock curves come from timing.jsonl, beside the metrics.
    expect(metrics.series['perf/sample_s']!.map(([it]) => it)).toEqual([1, 2]);
    const list = EpisodeListResponseSchema.parse(JSON.parse((await get(view.url, '/api/sources/0/iterations/2')).body));
    expect(list.episodes.map((e) => e.episodeId)).toEqual(['it2-ep0', 'it2-ep1', 'it2-ep2', 'it2-ep3']);

    const saved = readSampleFile(listSampleFiles(run)[1]!.path)[1]!;
    const ep = EpisodeViewSchema.parse(
      JSON.parse((await get(view.url, '/api/sources/0/iterations/2/episodes/1')).body),
    );
    const tok = new WordTokenizer();
    expect(ep.segments.map((s) => s.kind)).toEqual(saved.record.segments.map((s) => s.kind));
    ep.segments.forEach((s, i) => {
      const rec = saved.record.segments[i]!;
      expect(s.pieces.join('').trim()).toBe(tok.decode(rec.tokens).replace(/\n/g, '\n'));
      expect(s.mask).toEqual(rec.lossMask);
      expect(s.credit).toEqual(saved.credit.segments[i]);
    });
    expect(ep.summaries.length).toBe(saved.record.compactions);
    expect(ep.summaries.length).toBeGreaterThan(0);
    for (const sum of ep.summaries) {
      const seg = saved.record.segments[sum.segment]!;
      const generated = seg.tokens.filter((_, t) => seg.lossMask[t] === 1);
      expect(sum.text).toBe(tok.decode(generated.slice(0, -1))); // without the closing <eot>
      expect(ep.segments[sum.segment]!.windowTokens).toBe(saved.record.segments[sum.window]!.tokens.length);
      // The expert writes the oracle summary: every clause kept.
      expect(sum.oracle).toBe(sum.text);
      expect(sum.facts!.length).toBeGreaterThan(0);
      expect(sum.facts!.every((f) => f.kept)).toBe(true);
    }
    const fromFile = EpisodeViewSchema.parse(
      JSON.parse((await get(view.url, '/api/sources/1/iterations/0/episodes/0')).body),
    );
    expect(fromFile.credit).toBeNull();
    expect(fromFile.episodeId).toBe('it1-ep0');
  });

  it('serves files of a given directory', async () => {
    const r = await get(view.url, '/files/0/metrics.jsonl');
    expect(r.status).toBe(200);
    expect(r.body).toBe(readFileSync(join(run, 'metrics.jsonl'), 'utf8'));
    expect((await get(view.url, '/')).body).toContain('<title>bundle</title>');
    expect((await get(view.url, '/assets/app.js')).status).toBe(200);
  });

  it('refuses every path outside the directories it was given', async () => {
    const attempts = [
      '/files/0/../secret.txt',
      '/files/0/../../secret.txt',
      '/files/0/%2e%2e/secret.txt',
      '/files/0/%2E%2E/%2e%2e/secret.txt',
      '/files/0/..%2fsecret.txt',
      '/files/0/..%5csecret.txt',
      '/files/0/%2e%2e%2fsecret.txt',
      `/files/0/${encodeURIComponent(join(root, 'secret.txt'))}`,
      `/files/0/${join(root, 'secret.txt')}`,
      '/files/0//etc/passwd',
      '/files/0/link-to-secret.txt',
      '/files/0/link-to-private/secret.txt',
      '/files/0/%00secret.txt',
      '/files/0/%zz',
      '/files/1/episodes.jsonl',
      '/files/9/secret.txt',
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/..%2f..%2fsecret.txt',
      `/${encodeURIComponent(join(root, 'secret.txt'))}`,
      '/api/sources/0/iterations/../../../secret.txt',
    ];
    for (const path of attempts) {
      const r = await get(view.url, path);
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
      expect(r.body).not.toContain(SECRET);
    }
  });

  it('answers only its own Host and only reads', async () => {
    const port = new URL(view.url).port;
    expect((await get(view.url, '/api/sources', { host: `evil.example:${port}` })).status).toBe(403);
    expect((await get(view.url, '/api/sources', { host: `localhost:${port}` })).status).toBe(200);
    expect((await get(view.url, '/api/sources', {}, 'POST')).status).toBe(405);
    expect((await get(view.url, '/api/sources/7/metrics')).status).toBe(404);
    expect((await get(view.url, '/api/sources/0/iterations/99')).status).toBe(404);
  });

  it('names runs by system and seed, finds the runs a pipeline adds later, and versions each run’s curves', async () => {
    // A pipeline directory as crl reproduce lays it out, its runs copied from the tiny run.
    const pipe = join(root, 'reproduce-quick-20261201T120000');
    const addRun = (system: string, seed: number) => {
      const dir = join(pipe, 'systems', `${system}--kv-ledger--s${seed}`);
      cpSync(run, dir, { recursive: true, dereference: false, filter: (f) => !f.includes('link-to') });
      const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as {
        system: string;
        config: { seed: number };
      };
      writeFileSync(
        join(dir, 'config.json'),
        JSON.stringify({ ...config, system, config: { ...config.config, seed } }),
      );
      return dir;
    };
    const first = addRun('compaction-rl', 0);
    const bundle = join(root, 'bundle');
    const live = await startViewServer({ inputs: [pipe, run], port: 0, bundleDir: bundle });
    try {
      const sources = async () =>
        SourcesResponseSchema.parse(JSON.parse((await get(live.url, '/api/sources')).body)).sources;
      const before = await sources();
      expect(before.map((s) => [s.id, s.name, s.group, s.seed])).toEqual([
        [0, 'compaction-rl · seed 0 (reproduce-quick-20261201T120000)', 'reproduce-quick-20261201T120000', 0],
        [1, 'compaction-rl · seed 0 (tiny-run)', 'tiny-run', 0],
      ]);
      addRun('no-compaction', 1); // the pipeline starts its next run
      const after = await sources();
      expect(after.map((s) => [s.id, s.name])).toEqual([
        [0, 'compaction-rl · seed 0 (reproduce-quick-20261201T120000)'],
        [1, 'compaction-rl · seed 0 (tiny-run)'],
        [2, 'no-compaction · seed 1'],
      ]);
      expect(after[0]!.version).toBe(before[0]!.version);
      appendFileSync(
        join(first, 'metrics.jsonl'),
        `${JSON.stringify({ iteration: 3, metrics: { 'loss/policy': 1 } })}\n`,
      );
      expect((await sources())[0]!.version).not.toBe(before[0]!.version);
      const metrics = MetricsResponseSchema.parse(JSON.parse((await get(live.url, '/api/sources/0/metrics')).body));
      expect(metrics.series['loss/policy']!.at(-1)).toEqual([3, 1]);
    } finally {
      await live.close();
    }
  });

  it('takes a directory of runs and pipelines, as tensorboard --logdir runs/ does, grouping runs by pipeline', async () => {
    const runs = join(root, 'runs');
    const copy = (to: string, seed: number) => {
      cpSync(run, to, { recursive: true, filter: (f) => !f.includes('link-to') });
      const config = JSON.parse(readFileSync(join(to, 'config.json'), 'utf8')) as { config: { seed: number } };
      writeFileSync(join(to, 'config.json'), JSON.stringify({ ...config, config: { ...config.config, seed } }));
    };
    copy(join(runs, 'solo'), 7);
    copy(join(runs, 'pipe-x', 'systems', 'compaction-rl--kv-ledger--s4'), 4);
    mkdirSync(join(runs, 'notes')); // no run: left out
    const all = await startViewServer({ inputs: [runs], port: 0, bundleDir: join(root, 'bundle') });
    try {
      const sources = async () =>
        SourcesResponseSchema.parse(JSON.parse((await get(all.url, '/api/sources')).body)).sources;
      expect((await sources()).map((s) => [s.name, s.group])).toEqual([
        ['compaction-rl · seed 4', 'pipe-x'],
        ['compaction-rl · seed 7', 'runs'],
      ]);
      copy(join(runs, 'later'), 8); // a crl train started after the viewer
      expect((await sources()).map((s) => s.name)).toEqual([
        'compaction-rl · seed 4',
        'compaction-rl · seed 7',
        'compaction-rl · seed 8',
      ]);
    } finally {
      await all.close();
    }
  });
});
