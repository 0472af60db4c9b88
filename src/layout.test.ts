import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * docs/layout.md's layer table is the law of imports: every import of a source file (type-only
 * ones included; tests excluded) goes to its own layer or to one its row allows, the allowed
 * graph itself has no circle, and no files import each other in a circle. A layer's sub-folders
 * (model/tokenizer/, experiments/train/, ...) are rooms of that layer, not layers of their own; no
 * folder holds more than MAX_FILES_PER_FOLDER source files of its own, so each is named for what it holds.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

/** Rows of the table under "## Layers": | `layer` | `a`, `b` | ... */
function layerTable(): Map<string, Set<string>> {
  const doc = readFileSync(join(ROOT, 'docs', 'layout.md'), 'utf8');
  const section = doc.split(/^## Layers$/m)[1]?.split(/^## /m)[0] ?? '';
  const rows = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const name = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (!name) continue;
    rows.set(name, new Set([...(cells[2] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!)));
  }
  return rows;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'web' ? [] : sourceFiles(p); // view/web is its own program (tsconfig)
    return /\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/** The layer of a file under src/: its top folder, or the file's name for a top-level file. */
const layerOf = (file: string): string => relative(SRC, file).split('/')[0]!;

function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((i) => i.fileName)
    .filter((f) => f.startsWith('.'))
    .map((f) => resolve(dirname(file), f));
}

const MAX_FILES_PER_FOLDER = 25;

const table = layerTable();
const files = sourceFiles(SRC);
const edges = files.map((f) => ({ file: f, imports: importsOf(f).filter((t) => t.startsWith(SRC)) }));

describe('docs/layout.md layers', () => {
  it('names every folder of src/', () => {
    const layers = new Set(files.map(layerOf));
    expect([...layers].filter((l) => !table.has(l)).sort()).toEqual([]);
    for (const allowed of table.values()) for (const l of allowed) expect(table.has(l), l).toBe(true);
  });

  it(`holds at most ${MAX_FILES_PER_FOLDER} source files (tests excluded) in any one folder`, () => {
    const perFolder = new Map<string, number>();
    for (const f of files) perFolder.set(dirname(f), (perFolder.get(dirname(f)) ?? 0) + 1);
    const crowded = [...perFolder]
      .filter(([, n]) => n > MAX_FILES_PER_FOLDER)
      .map(([d, n]) => `${relative(ROOT, d)}: ${n}`);
    expect(crowded).toEqual([]);
  });

  it('allows a graph without circles (a true order of layers)', () => {
    const state = new Map<string, 'open' | 'done'>();
    const visit = (l: string, path: string[]): void => {
      if (state.get(l) === 'done') return;
      if (state.get(l) === 'open') throw new Error(`the layer table has a circle: ${[...path, l].join(' -> ')}`);
      state.set(l, 'open');
      for (const d of table.get(l) ?? []) visit(d, [...path, l]);
      state.set(l, 'done');
    };
    for (const l of table.keys()) visit(l, []);
  });

  it('every import goes down the table', () => {
    const bad = edges.flatMap(({ file, imports }) =>
      imports
        .filter((t) => layerOf(t) !== layerOf(file) && !table.get(layerOf(file))?.has(layerOf(t)))
        .map((t) => `${relative(SRC, file)} -> ${relative(SRC, t)}`),
    );
    expect(bad).toEqual([]);
  });

  it('no files import each other in a circle (type-only imports included)', () => {
    const graph = new Map(edges.map((e) => [e.file, e.imports]));
    const state = new Map<string, 'open' | 'done'>();
    const circles: string[] = [];
    const visit = (f: string, path: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        circles.push([...path.slice(path.indexOf(f)), f].map((x) => relative(SRC, x)).join(' -> '));
        return;
      }
      state.set(f, 'open');
      for (const t of graph.get(f) ?? []) visit(t, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of graph.keys()) visit(f, []);
    expect(circles).toEqual([]);
  });
});
