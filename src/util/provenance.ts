import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/**
 * Where an artifact came from (docs/decisions/0016-results-statistics-provenance.md): the commit of
 * the code that made it, whether that checkout had uncommitted changes, the command line, and a
 * hash of the resolved config. Run directories (config.json), evaluation files and reports carry
 * it, so a number can be traced to the code and settings that produced it, and `crl reproduce`
 * can refuse to mix directories made with another config.
 */
export const ProvenanceSchema = z
  .object({
    /** git HEAD of the code that ran; null outside a git checkout. */
    commit: z.string().nullable(),
    /** Tracked files differed from the commit; null when unknown. */
    dirty: z.boolean().nullable(),
    /** The command line, `crl` and its arguments (no interpreter or script path). */
    command: z.array(z.string()),
    /** configHash() of the resolved config this artifact was made with. */
    configHash: z.string(),
    createdAt: z.string(),
    /**
     * The kernels the numbers were computed with (`native (march=native avx2 …)`, `typescript`):
     * absent in artifacts made before it was recorded, or by a process that never set it.
     */
    kernels: z.string().optional(),
  })
  .strict();
export type Provenance = z.infer<typeof ProvenanceSchema>;

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

let cachedVersion: { commit: string | null; dirty: boolean | null } | undefined;

/** The checkout's commit and dirtiness, read once per process (git; null where git cannot tell). */
export function codeVersion(): { commit: string | null; dirty: boolean | null } {
  if (cachedVersion) return cachedVersion;
  const git = (args: string[]): string | null => {
    try {
      return execFileSync('git', ['-C', REPO_ROOT, ...args], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      return null;
    }
  };
  const commit = git(['rev-parse', 'HEAD']);
  const status = commit === null ? null : git(['status', '--porcelain', '--untracked-files=no']);
  cachedVersion = { commit, dirty: status === null ? null : status !== '' };
  return cachedVersion;
}

/** "3b0be0a" or "3b0be0a+dirty" or "unknown": how reports name a version. */
export function shortVersion(p: Pick<Provenance, 'commit' | 'dirty'> | null | undefined): string {
  if (!p || p.commit === null) return 'unknown';
  return `${p.commit.slice(0, 7)}${p.dirty ? '+dirty' : ''}`;
}

let command: string[] = ['node', ...process.argv.slice(2)];

/** The CLI records its own command line here at start-up (`crl reproduce --preset quick`). */
export function setCommandLine(argv: readonly string[]): void {
  command = [...argv];
}

export function commandLine(): string[] {
  return [...command];
}

let kernels: string | undefined;

/** The CLI records the kernels it computes with here at start-up (tensor/ describes them; util may not import it). */
export function setKernels(description: string): void {
  kernels = description;
}

/**
 * JSON with object keys sorted at every level, so equal configs give equal text whatever the order
 * their fields were written in. With `root`, absolute paths inside it are written relative to it
 * (`<root>/systems/base--kv-ledger--s0/...`), also after a scheme such as `harbor:` (a task set
 * inside the pipeline): a pipeline directory that moves keeps its hashes.
 */
export function canonicalJson(value: unknown, root?: string): string {
  const base = root === undefined ? undefined : resolve(root);
  const inside = (p: string): string | null => {
    const r = relative(base!, p);
    if (r === '') return '<root>';
    return !r.startsWith('..') && !isAbsolute(r) ? `<root>/${r.split(sep).join('/')}` : null;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string' && base !== undefined) {
      if (isAbsolute(v)) return inside(v) ?? v;
      const scheme = /^([a-z][a-z0-9-]*:)(\/.*)$/.exec(v);
      if (scheme) {
        const r = inside(scheme[2]!);
        return r ? `${scheme[1]}${r}` : v;
      }
      return v;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) {
        const x = (v as Record<string, unknown>)[k];
        if (x !== undefined) out[k] = walk(x);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(walk(value));
}

/** `sha256:` and the first 16 hex digits of the canonical JSON's SHA-256. */
export function configHash(value: unknown, root?: string): string {
  return `sha256:${createHash('sha256').update(canonicalJson(value, root)).digest('hex').slice(0, 16)}`;
}

/** This process's provenance for an artifact made with `config`. */
export function provenance(config: unknown, root?: string, now = new Date()): Provenance {
  const v = codeVersion();
  return {
    ...v,
    command: commandLine(),
    configHash: configHash(config, root),
    createdAt: now.toISOString(),
    ...(kernels === undefined ? {} : { kernels }),
  };
}

/**
 * The paths (`a.b.c`) where two configs differ, after canonicalization; at most `limit`, each with
 * its two values, for error messages that say what to change.
 */
export function configDiff(options: { stored: unknown; wanted: unknown; root?: string; limit?: number }): string[] {
  const a = JSON.parse(canonicalJson(options.stored, options.root)) as unknown;
  const b = JSON.parse(canonicalJson(options.wanted, options.root)) as unknown;
  const out: string[] = [];
  const show = (x: unknown) => (x === undefined ? '(absent)' : JSON.stringify(x));
  const visit = (x: unknown, y: unknown, path: string) => {
    if (JSON.stringify(x) === JSON.stringify(y)) return;
    const isObj = (o: unknown): o is Record<string, unknown> =>
      o !== null && typeof o === 'object' && !Array.isArray(o);
    if (isObj(x) && isObj(y)) {
      for (const k of [...new Set([...Object.keys(x), ...Object.keys(y)])].sort())
        visit(x[k], y[k], path ? `${path}.${k}` : k);
      return;
    }
    out.push(`${path || '(top level)'}: ${show(x)} -> ${show(y)}`);
  };
  visit(a, b, '');
  const limit = options.limit ?? 6;
  return out.length > limit ? [...out.slice(0, limit), `… and ${out.length - limit} more`] : out;
}
