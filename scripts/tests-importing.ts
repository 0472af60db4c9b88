// Prints the test files under src/ that import any of the given modules, directly or through other
// files of ours (static and literal dynamic imports; type-only imports count too, which errs on the
// side of running a test), leaving out those that import any module given after --except.
// .ci/run uses it to choose the tests worth a second pass with the TypeScript twins of the native
// kernels: those whose code reaches the module that picks native or twin, except those whose subject
// is a process they spawn (`crl`, `crl serve`, Redis, the browser), which the first pass covers.
// Usage: node --import tsx scripts/tests-importing.ts FILE... [--except FILE...]
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const args = process.argv.slice(2);
const cut = args.includes('--except') ? args.indexOf('--except') : args.length;
const wanted = args.slice(0, cut).map((t) => resolve(t));
const except = args.slice(cut + 1).map((t) => resolve(t));
if (wanted.length === 0 || [...wanted, ...except].some((t) => !existsSync(t))) {
  process.stderr.write('usage: tests-importing.ts FILE... [--except FILE...] (existing source files)\n');
  process.exit(2);
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : files(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((i) => i.fileName)
    .filter((f) => f.startsWith('.'))
    .map((f) => resolve(dirname(file), f));
}

const importers = new Map<string, string[]>();
for (const f of files(join(ROOT, 'src'))) {
  for (const i of importsOf(f)) importers.set(i, [...(importers.get(i) ?? []), f]);
}

/** Every file that imports one of `targets` through any chain (the targets included): the import graph walked backwards. */
function importing(targets: readonly string[]): Set<string> {
  const reached = new Set(targets);
  const queue = [...targets];
  while (queue.length > 0) {
    for (const f of importers.get(queue.pop()!) ?? []) {
      if (!reached.has(f)) {
        reached.add(f);
        queue.push(f);
      }
    }
  }
  return reached;
}

const excluded = importing(except);
const tests = [...importing(wanted)].filter((f) => /\.test\.tsx?$/.test(f) && !excluded.has(f)).sort();
for (const t of tests) process.stdout.write(`${relative(ROOT, t)}\n`);
