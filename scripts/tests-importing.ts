// Prints the test files under src/ that import any of the given modules, directly or through other
// files of ours (static and literal dynamic imports; type-only imports count too, which errs on the
// side of running a test). .ci/run uses it to choose the tests worth a second pass with the
// TypeScript twins of the native kernels: those whose code reaches the module that picks native or
// twin. Usage: node --import tsx scripts/tests-importing.ts src/tensor/native.ts [...]
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const targets = new Set(process.argv.slice(2).map((t) => resolve(t)));
if (targets.size === 0 || [...targets].some((t) => !existsSync(t))) {
  process.stderr.write('usage: tests-importing.ts FILE... (existing source files)\n');
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

// Walk the import graph backwards from the targets: every file reached imports one of them.
const importers = new Map<string, string[]>();
for (const f of files(join(ROOT, 'src'))) {
  for (const i of importsOf(f)) importers.set(i, [...(importers.get(i) ?? []), f]);
}
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
const tests = [...reached].filter((f) => /\.test\.tsx?$/.test(f)).sort();
for (const t of tests) process.stdout.write(`${relative(ROOT, t)}\n`);
