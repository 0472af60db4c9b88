import { realpathSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';

/**
 * Resolves a URL path (still percent-encoded, as it came off the wire) to a regular file inside
 * `root`, or null. Refused: undecodable escapes, NUL bytes, absolute paths, any `..` segment
 * (also when encoded: `%2e%2e`, `..%2f`), and anything whose real path, symlinks followed, leaves
 * the root's real path. The server serves nothing outside the directories it was given.
 */
export function resolveInside(root: string, urlPath: string): string | null {
  let rel: string;
  try {
    rel = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (rel === '' || rel.includes('\0') || isAbsolute(rel) || /^[a-zA-Z]:/.test(rel)) return null;
  if (rel.split(/[\\/]/).some((part) => part === '..')) return null;
  let real: string;
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
    real = realpathSync(resolve(realRoot, rel));
  } catch {
    return null;
  }
  const inside = relative(realRoot, real);
  if (inside === '' || inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) return null;
  try {
    return statSync(real).isFile() ? real : null;
  } catch {
    return null;
  }
}
