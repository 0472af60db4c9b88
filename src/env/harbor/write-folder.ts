import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Writes a Harbor task folder from a map of relative paths to contents; shell scripts (*.sh) are
 * made executable, as task authors ship them. Returns `dir`.
 */
export function writeFolderFiles(dir: string, files: Readonly<Record<string, string>>): string {
  for (const [rel, text] of Object.entries(files)) {
    const p = join(dir, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
    if (rel.endsWith('.sh')) chmodSync(p, 0o755);
  }
  return dir;
}
