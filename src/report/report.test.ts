import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EvalResult } from '../eval/eval-result.ts';
import { FIGURES } from './plots.ts';
import { RUN_FILES } from './run-files.ts';
import { buildTables, cellFor } from './tables.ts';
import { relativeLabel } from './collect-runs.ts';
import { writeReport } from './write-report.ts';

const SYSTEMS = [
  'base',
  'ppo-single-window',
  'compaction-rl',
  'no-summary-training',
  'segment-mean-loss',
  'no-cross-trajectory-gae',
  'broadcast',
];

function evalFile(o: {
  system: string;
  writer?: string;
  variant?: string;
  p: number;
  windows?: number[];
  seed?: number;
}): EvalResult {
  const taskSeeds = [1, 2, 3, 4, 5, 6, 7, 8];
  const perTask = taskSeeds.map((_, i) => (i < Math.round(o.p * 8) ? 1 : 0));
  const mode = (windows: number) => ({
    windows,
    passAt1: o.p,
    low: Math.max(0, o.p - 0.1),
    high: Math.min(1, o.p + 0.1),
    tasks: 8,
    samples: 32,
    effectiveSamples: 8,
    meanCompactions: windows - 1,
    truncatedRate: 0,
    meanGeneratedTokens: 100,
    perTask,
  });
  return {
    kind: 'crl-eval',
    version: 1,
    system: o.system,
    policy: 'ckpt',
    env: 'kv-ledger',
    variant: o.variant ?? 'default',
    summaryWriter: o.writer ?? 'self',
    contextWindow: 256,
    samplesPerTask: 4,
    taskSeeds,
    trainingWindows: 4,
    seed: o.seed ?? 0,
    modes: Object.fromEntries((o.windows ?? [1, 4]).map((w) => [`x${w}`, mode(w)])),
  };
}

/** A synthetic pipeline directory shaped like `crl reproduce` output. */
function syntheticPipeline(): string {
  const root = mkdtempSync(join(tmpdir(), 'crl-report-'));
  mkdirSync(join(root, RUN_FILES.eval), { recursive: true });
  SYSTEMS.forEach((system, s) => {
    const run = join(root, RUN_FILES.systems, system);
    mkdirSync(run, { recursive: true });
    writeFileSync(
      join(run, RUN_FILES.config),
      JSON.stringify({ system, config: { env: { name: 'kv-ledger' }, seed: 0 } }),
    );
    const lines = Array.from({ length: 6 }, (_, i) =>
      JSON.stringify({
        iteration: i + 1,
        metrics: Object.fromEntries(FIGURES.map((f, j) => [f.metric, s + i * 0.1 + j])),
      }),
    );
    writeFileSync(join(run, RUN_FILES.metrics), `${lines.join('\n')}\n{"iteration": 7, "metr`); // torn last line
    writeFileSync(join(root, RUN_FILES.eval, `${system}.json`), JSON.stringify(evalFile({ system, p: (2 + s) / 8 })));
  });
  for (const writer of ['oracle', 'null', 'lossy:0.3'])
    writeFileSync(
      join(root, RUN_FILES.eval, `base-${writer}.json`),
      JSON.stringify(evalFile({ system: 'base', writer, p: writer === 'null' ? 0 : 0.75, windows: [4] })),
    );
  writeFileSync(
    join(root, RUN_FILES.eval, 'crl-heldout.json'),
    JSON.stringify(evalFile({ system: 'compaction-rl', variant: 'queries-first', p: 0.5, windows: [4] })),
  );
  writeFileSync(
    join(root, RUN_FILES.eval, 'crl-long.json'),
    JSON.stringify(evalFile({ system: 'compaction-rl', variant: 'default', p: 0.625, windows: [8] })),
  );
  return root;
}

describe('report', () => {
  it('renders every table and plot from a synthetic run directory', async () => {
    const root = syntheticPipeline();
    const out = join(root, 'report');
    const { html, markdown, warnings } = await writeReport({ runDirs: [root], outDir: out });
    const h = readFileSync(html, 'utf8');
    const md = readFileSync(markdown, 'utf8');
    for (const id of ['table2', 'table3', 'table4', 'table1', 'heldout', 'longer']) expect(h).toContain(`id="${id}"`);
    for (const f of FIGURES) {
      expect(h).toMatch(new RegExp(`id="fig-${f.id}"><svg`));
      expect(md).toContain(`figures/${f.id}.svg`);
    }
    expect(h).not.toMatch(/<script|src="http|href="http/); // self-contained, offline
    // Points to crl view for the same runs, named as the report names them (relative to it).
    expect(h).toContain(`<code>crl view ${relative(out, root)}</code>`);
    expect(md).toContain(`\`crl view ${relative(out, root)}\``);
    expect(md).toContain('| CompactionRL | 50.0 [');
    expect(md).toContain('base (SFT) + oracle summaries');
    expect(md).toContain('kv-ledger:queries-first');
    expect(md).toContain('kv-ledger x8');
    expect(md).not.toContain('not run');
    expect(warnings.filter((w) => w.includes('unreadable line'))).toHaveLength(SYSTEMS.length);
  });

  it('renders "not run" for missing data instead of crashing', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-report-empty-'));
    const { html, markdown } = await writeReport({
      runDirs: [root, join(root, 'missing')],
      outDir: join(root, 'report'),
    });
    const h = readFileSync(html, 'utf8');
    expect(h).toContain('not run');
    for (const id of ['table2', 'table3', 'table4', 'table1', 'heldout', 'longer']) expect(h).toContain(`id="${id}"`);
    expect(readFileSync(markdown, 'utf8')).toContain('not a directory');
  });

  it('names run directories relative to the report, never by an absolute path of the machine', async () => {
    const root = syntheticPipeline();
    writeFileSync(join(root, RUN_FILES.eval, 'broken.json'), '{"kind":'); // a warning that names a file
    writeFileSync(join(root, RUN_FILES.systems, 'base', RUN_FILES.config), 'not json'); // system falls back to the dir
    const out = join(mkdtempSync(join(tmpdir(), 'crl-report-out-')), 'nested', 'report');
    const { html, markdown, warnings } = await writeReport({ runDirs: [root, join(root, 'missing')], outDir: out });
    const files = [html, markdown, ...readdirSync(join(out, 'figures')).map((f) => join(out, 'figures', f))];
    const rel = relative(out, root);
    expect(rel.startsWith('..')).toBe(true);
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const abs of [root, out, tmpdir(), process.cwd()]) expect(text, `${f} names ${abs}`).not.toContain(abs);
    }
    const md = readFileSync(markdown, 'utf8');
    expect(md).toContain(`Runs: \`${rel}\`, \`${rel}/missing\``);
    expect(md).toContain(`${rel}/eval/broken.json`);
    expect(md).toContain(`${rel}/missing: not a directory`);
    expect(readFileSync(join(out, 'figures', 'success.svg'), 'utf8')).toContain('kv-ledger'); // a panel per family
    expect(warnings.every((w) => !w.includes(root))).toBe(true);
  });

  it('--with-data copies the raw data next to the report, and the copy regenerates the same tables', async () => {
    const root = syntheticPipeline();
    const cfg = join(root, RUN_FILES.systems, 'compaction-rl', RUN_FILES.config);
    writeFileSync(
      cfg,
      JSON.stringify({ system: 'compaction-rl', config: { model: { init: join(root, 'systems', 'base') } } }),
    );
    // An evaluation that names a file outside the run (written elsewhere, then moved in).
    const evalPath = join(root, RUN_FILES.eval, 'base-oracle.json');
    const outside = join(tmpdir(), 'elsewhere', 'base.json');
    writeFileSync(evalPath, JSON.stringify({ ...JSON.parse(readFileSync(evalPath, 'utf8')), policy: outside }));
    const out = join(mkdtempSync(join(tmpdir(), 'crl-archive-')), 'report');
    const first = await writeReport({ runDirs: [root], outDir: out, withData: true });
    const copied = JSON.parse(
      readFileSync(join(out, 'data', RUN_FILES.systems, 'compaction-rl', RUN_FILES.config), 'utf8'),
    );
    expect(copied.config.model.init).toBe('systems/base'); // no machine path in the copy
    // ... except the outside one, which is kept and reported (once, naming the file and the path).
    const flagged = first.warnings.filter((w) => w.includes('outside its run directory'));
    expect(flagged).toHaveLength(1);
    expect(flagged[0]).toContain('base-oracle.json');
    expect(flagged[0]).toContain(outside);
    expect(readdirSync(join(out, 'data', RUN_FILES.eval)).length).toBe(readdirSync(join(root, RUN_FILES.eval)).length);
    const again = join(mkdtempSync(join(tmpdir(), 'crl-regen-')), 'report');
    await writeReport({ runDirs: [join(out, 'data')], outDir: again });
    // The tables, without the lines that name the report's sources (the copy is another directory).
    const tables = (f: string) =>
      readFileSync(f, 'utf8')
        .split('## Provenance')[0]!
        .replace(/^(Runs: |The same runs in the interactive viewer).*$/gm, '');
    expect(tables(join(again, 'report.md'))).toBe(tables(first.markdown));
  });

  it('relativeLabel: "." for the report directory itself, "/" separators, ".." upwards', () => {
    const label = relativeLabel(join(tmpdir(), 'a', 'report'));
    expect(label(join(tmpdir(), 'a', 'report'))).toBe('.');
    expect(label(join(tmpdir(), 'a'))).toBe('..');
    expect(label(join(tmpdir(), 'a', 'systems', 'x'))).toBe('../systems/x');
  });

  // A tools-format pipeline asks every evaluation for the preset's C and each runs at the format's
  // larger window: the pipeline's own report and last JSON line looked for the asked C and were empty.
  it('tabulates evaluations at the C they were asked for when the format ran them at another', () => {
    const asked = (e: EvalResult): EvalResult => ({
      ...e,
      contextWindow: 986,
      request: { rollout: { contextWindow: 461 } },
    });
    const evals = [evalFile({ system: 'base', p: 0.25 }), evalFile({ system: 'compaction-rl', p: 0.75 })].map(asked);
    for (const contextWindow of [461, undefined]) {
      const t2 = buildTables(evals, { trainingWindows: 4, contextWindow }).find((t) => t.id === 'table2')!;
      const row = t2.rows.find((r) => r.label === 'CompactionRL')!;
      expect(row.cells.filter((c) => c !== null && c !== 'n/a').length, String(contextWindow)).toBe(2);
    }
    const atRan = buildTables(evals, { trainingWindows: 4, contextWindow: 986 }).find((t) => t.id === 'table2')!;
    expect(atRan.rows.find((r) => r.label === 'CompactionRL')!.cells.every((c) => c === null)).toBe(true);
  });

  it('shows a system evaluated under its own name as its own row of the main table', () => {
    const t2 = buildTables([
      evalFile({ system: 'compaction-rl', p: 0.5 }),
      evalFile({ system: 'my-variant', p: 0.25 }),
    ]).find((t) => t.id === 'table2')!;
    const row = t2.rows.find((r) => r.label === 'my-variant')!;
    expect(row).toBeDefined();
    expect(row.cells.filter((c) => c !== null).length).toBeGreaterThan(0);
  });

  it('puts the credit systems (docs/credit.md) in their own table, each paired with CompactionRL', () => {
    const only = buildTables([evalFile({ system: 'compaction-rl', p: 0.5 })]);
    expect(only.some((t) => t.id === 'credit')).toBe(false);
    const tables = buildTables([
      evalFile({ system: 'compaction-rl', p: 0.5 }),
      evalFile({ system: 'full-trajectory-gae', p: 0.75 }),
      evalFile({ system: 'per-position-whitening', p: 0.25 }),
    ]);
    const credit = tables.find((t) => t.id === 'credit')!;
    expect(credit.rows.map((r) => r.label)).toEqual([
      'CompactionRL',
      'full-trajectory GAE',
      'whitening per segment position',
      'Δ full-trajectory GAE vs CompactionRL',
      'Δ whitening per segment position vs CompactionRL',
    ]);
    // Not repeated as custom rows of the main table.
    expect(tables.find((t) => t.id === 'table2')!.rows.some((r) => r.label === 'full-trajectory GAE')).toBe(false);
  });

  it('pools several seeds of one system into one cell', () => {
    const evals = [
      evalFile({ system: 'compaction-rl', p: 0.5, seed: 0 }),
      evalFile({ system: 'compaction-rl', p: 1, seed: 1 }),
    ];
    const c = cellFor(evals, {
      system: 'compaction-rl',
      env: 'kv-ledger',
      variant: 'default',
      writer: 'self',
      mode: 'x4',
    })!;
    expect(c.passAt1).toBeCloseTo(0.75, 9);
    expect(c.runs).toBe(2);
    expect(c.seeds).toBe(2);
    const t2 = buildTables(evals).find((t) => t.id === 'table2')!;
    expect(t2.rows.slice(0, 3).map((r) => r.cells[1] === null)).toEqual([true, true, false]);
    expect(t2.notes[0]).toBe('Seeds: each cell pools 2 seeds (0, 1); 8 tasks × 4 samples per seed and family.');
  });
});
