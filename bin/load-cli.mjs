// Loads the `crl` CLI: from one prebuilt ES module when it is up to date with the sources, else
// through tsx.
//
// Why a bundle: through tsx, every `crl` start resolves, transforms and links about 600 TypeScript
// modules through loader hooks on a second thread, about 2.3 s of CPU before the command does
// anything; one esbuild-bundled file starts in about a third of that. Tests, rollout workers and
// scripts start `crl` hundreds of times, so this is most of the test suite's CPU that is not tests.
//
// The bundle is a cache, never a build step: build/cli/crl.mjs is written on first use and again
// whenever one of the sources it was built from changed (each input's mtime and size are recorded
// in its first line and compared at every start, about 5 ms). If it cannot be built (a read-only
// install, no esbuild), crl runs through tsx exactly as before; CRL_NO_BUNDLE=1 forces that path.
// Packages stay external (resolved from node_modules at run time); `import.meta.url` in each source
// is rewritten to that source's own URL, so paths computed from it (the native addon, the viewer's
// files, package.json, python/) are the same as under tsx.
import { mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ENTRY = join(ROOT, 'src', 'cli', 'main.ts');
const BUNDLE = join(ROOT, 'build', 'cli', 'crl.mjs');
const HEADER = '// crl-bundle-inputs ';

/** The CLI module ({ runCli, buildProgram }). */
export async function loadCli() {
  if (process.env.CRL_NO_BUNDLE !== '1') {
    const bundle = (await freshBundle()) ?? (await buildBundle());
    if (bundle) return import(pathToFileURL(bundle).href);
  }
  const { register } = await import('tsx/esm/api');
  register();
  return import(pathToFileURL(ENTRY).href);
}

/** The bundle's path when every input it records is unchanged, else null. */
async function freshBundle() {
  let first;
  try {
    const text = readFileSync(BUNDLE, 'utf8');
    first = text.slice(0, text.indexOf('\n'));
  } catch {
    return null;
  }
  if (!first.startsWith(HEADER)) return null;
  try {
    const { node, inputs } = JSON.parse(first.slice(HEADER.length));
    if (node !== process.versions.node) return null;
    for (const [path, [mtimeMs, size]] of Object.entries(inputs)) {
      const s = statSync(join(ROOT, path));
      if (s.mtimeMs !== mtimeMs || s.size !== size) return null;
    }
    return BUNDLE;
  } catch {
    return null;
  }
}

/** Builds the bundle and returns its path, or null when it cannot be built here. */
async function buildBundle() {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    return null;
  }
  const bundleDir = dirname(BUNDLE);
  const tmp = `${BUNDLE}.${process.pid}.tmp`;
  try {
    const result = await esbuild.build({
      entryPoints: [ENTRY],
      absWorkingDir: ROOT,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: `node${process.versions.node.split('.')[0]}`,
      packages: 'external',
      write: false,
      metafile: true,
      logLevel: 'silent',
      plugins: [ownImportMetaUrl(bundleDir)],
    });
    const inputs = {};
    for (const path of Object.keys(result.metafile.inputs)) {
      const s = statSync(join(ROOT, path));
      inputs[path.split(sep).join('/')] = [s.mtimeMs, s.size];
    }
    const header = `${HEADER}${JSON.stringify({ node: process.versions.node, inputs })}\n`;
    mkdirSync(bundleDir, { recursive: true });
    // The entry's shebang line would follow the header, where it is a syntax error.
    const code = result.outputFiles[0].text.replace(/^#!.*\n/, '');
    writeFileSync(tmp, header + code);
    // Atomic: crl processes starting at the same time each build, and each reads a whole file.
    renameSync(tmp, BUNDLE);
    return BUNDLE;
  } catch {
    try {
      unlinkSync(tmp);
    } catch {
      // never written
    }
    return null;
  } finally {
    // esbuild's service process would otherwise stay beside a long crl run until it exits.
    await esbuild.stop();
  }
}

/** An esbuild plugin: `import.meta.url` in each source becomes that source's URL, from the bundle's. */
function ownImportMetaUrl(bundleDir) {
  return {
    name: 'own-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        const rel = relative(bundleDir, args.path).split(sep).join('/');
        const own = `new URL(${JSON.stringify(rel)}, import.meta.url).href`;
        return { contents: source.replaceAll('import.meta.url', own), loader: 'ts' };
      });
    },
  };
}
