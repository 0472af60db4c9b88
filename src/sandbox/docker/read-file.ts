import { describeExec, programGone } from '../docker-exec.ts';
import { SandboxError } from '../sandbox-types.ts';
import { engineExec } from './engine-exec.ts';
import { heldFailure, type HeldPart } from './held-work.ts';
import { LISTDIR_FUNCTION, parseListing } from './dir-listing.ts';

/**
 * Regular files read from inside a container, never through a link (no part of the path may be
 * one): how rewards are read (docs/sandbox.md). One exec reads one file, or, once nothing runs in
 * the container any more (after the verifier: the caller's `before` confirms it first), every
 * small regular file of the file's directory, so the reads that follow (reward.json, reward.sig
 * beside reward.txt) cost no exec of their own.
 */

/** Longest output of a directory read kept; beyond it, files are read one by one. */
const MAX_DIR_BYTES = 8 * 1024 * 1024;

const FILE_SCRIPT =
  'p=$1; max=$2; d=; IFS=/; set -f; for part in ${p#/}; do d="$d/$part"; [ -L "$d" ] && exit 3; done; ' +
  '[ -f "$p" ] || exit 3; s=$(stat -c %s -- "$p") || exit 3; [ "$s" -le "$max" ] || exit 3; exec cat -- "$p"';

/** One file: its bytes, or null when absent, too big, not regular, or reached through a link. */
export async function readContainerFile(options: {
  name: string;
  path: string;
  maxBytes: number;
  before: HeldPart | null;
}): Promise<Buffer | null> {
  const { path, maxBytes } = options;
  const r = await run(options, FILE_SCRIPT, maxBytes + 1);
  if (r.code === 0 && r.out.length <= maxBytes) return r.out;
  if (r.code === 3 || r.code === 0) return null; // the script's own answer: not a file it may read
  return gone(options.name, path, r);
}

/**
 * Every regular file of `path`'s directory of at most `maxBytes`, by name, or null when the
 * directory cannot be read (absent, or reached through a link); 'too much' when the files
 * together are more than a directory read keeps.
 */
export async function readContainerDir(options: {
  name: string;
  path: string;
  maxBytes: number;
  before: HeldPart | null;
}): Promise<Map<string, Buffer> | null | 'too much'> {
  const dir = options.path.slice(0, options.path.lastIndexOf('/')) || '/';
  const r = await run(options, `${LISTDIR_FUNCTION}p=$1; d=\${p%/*}; listdir "\${d:-/}" "$2"`, MAX_DIR_BYTES);
  if (r.code !== 0) return gone(options.name, options.path, r);
  if (r.truncated) return 'too much';
  return parseListing(r.out).get(dir) ?? null;
}

async function run(
  options: { name: string; path: string; maxBytes: number; before: HeldPart | null },
  script: string,
  keep: number,
): Promise<{ code: number | null; out: Buffer; truncated: boolean; system: string; err: string; timedOut: boolean }> {
  const chunks: Buffer[] = [];
  let kept = 0;
  let truncated = false;
  let err = '';
  const r = await engineExec({
    container: options.name,
    cmd: [
      '/bin/bash',
      '--noprofile',
      '--norc',
      '-c',
      `${options.before?.script ?? ''}${script}`,
      'crl-read',
      options.path,
      String(options.maxBytes),
    ],
    stdin: options.before?.stdin,
    onStdout: (d) => {
      if (kept + d.length > keep) truncated = true;
      if (kept >= keep) return;
      chunks.push(d.subarray(0, keep - kept));
      kept += Math.min(d.length, keep - kept);
    },
    onStderr: (d) => (err = (err + d.toString('utf8')).slice(-1024)),
    timeoutMs: 120_000,
  });
  if (options.before) heldFailure(r.code, err, options.before.when);
  return { ...r, out: Buffer.concat(chunks), truncated, err };
}

/** A read that failed otherwise: a bash or cat removed from inside is the sandbox's (null); the engine failing is a SandboxError. */
async function gone(
  name: string,
  path: string,
  r: { code: number | null; system: string; err: string; timedOut: boolean },
): Promise<null> {
  if (await programGone(name, r.code)) return null;
  throw new SandboxError(
    `reading ${path} in the container failed: ${describeExec({ code: r.code, system: r.system, timedOut: r.timedOut, cancelled: false }, r.err)}`,
  );
}
