import { SandboxError } from '../sandbox-types.ts';

/**
 * The small regular files of container directories, as one stream out of an exec (read-file.ts,
 * and the verifier's exec: docker-exec.ts). `listdir DIR MAX` prints DIR NUL, then for each
 * regular file of DIR (not a link) of at most MAX bytes its name NUL, its size NUL and its bytes,
 * then a NUL; a DIR reached through a link, or not a directory, prints DIR NUL NUL NUL (no files,
 * and `-` for "not readable"). Only used when nothing else runs in the container: sizes cannot
 * change under it.
 */
export const LISTDIR_FUNCTION = `listdir() {
  local D=$1 max=$2 d= part f s IFS=/
  set -f
  for part in \${D#/}; do d="$d/$part"; if [ -L "$d" ]; then set +f; printf '%s\\0\\0-\\0' "$D"; return; fi; done
  set +f; IFS=$' \\t\\n'
  if [ ! -d "$D" ]; then printf '%s\\0\\0-\\0' "$D"; return; fi
  printf '%s\\0' "$D"
  for f in "$D"/* "$D"/.[!.]* "$D"/..?*; do
    [ -L "$f" ] && continue; [ -f "$f" ] || continue
    s=$(stat -c %s -- "$f") || continue; [ "$s" -le "$max" ] || continue
    printf '%s\\0%d\\0' "\${f##*/}" "$s"; head -c "$s" -- "$f"
  done
  printf '\\0'
}
`;

/** A directory's files by name, or null when it could not be read (absent, reached through a link). */
export type Listing = Map<string, Map<string, Buffer> | null>;

/** Parses what listdir printed (one call after another); a SandboxError when it does not parse. */
export function parseListing(out: Buffer): Listing {
  const dirs: Listing = new Map();
  let at = 0;
  const field = (): string => {
    const end = out.indexOf(0, at);
    if (end < 0) throw new SandboxError('a directory listing from the container that does not parse');
    const s = out.subarray(at, end).toString('utf8');
    at = end + 1;
    return s;
  };
  while (at < out.length) {
    const dir = field();
    const files = new Map<string, Buffer>();
    let readable = true;
    for (;;) {
      const name = field();
      if (name === '') {
        // `-` after the end: the directory could not be read.
        if (out[at] === 0x2d && out[at + 1] === 0) {
          readable = false;
          at += 2;
        }
        break;
      }
      const size = Number(field());
      if (!Number.isInteger(size) || at + size > out.length)
        throw new SandboxError('a directory listing from the container that does not parse');
      files.set(name, out.subarray(at, at + size));
      at += size;
    }
    dirs.set(dir, readable ? files : null);
  }
  return dirs;
}
