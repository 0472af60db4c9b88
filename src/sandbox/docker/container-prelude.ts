import { spawn } from 'node:child_process';
import { bashQuote } from '../shell-script.ts';
import { SandboxError } from '../sandbox-types.ts';
import { PLACE_FUNCTION } from './held-work.ts';

/**
 * What a sandbox container runs before its supervisor (docker-backend.ts): it makes the spec's
 * directories, then takes the spec's seed trees on its stdin, each as a line `S <bytes> <dir>`
 * and that many bytes of tar, until a line `GO`, then the supervisor starts and says READY. A
 * container can so be started before its episode is known (a spare, spare-containers.ts) and be
 * given its files when one takes it, without an exec of their own. The tar is read with
 * `head -c`, which reads no byte past the count, so the lines after it stay on stdin.
 */
export function preludeScript(dirs: readonly string[]): string {
  return `mkdir -p -- ${dirs.map(bashQuote).join(' ')} || { printf 'ERROR cannot make the directories\\n' >&2; exit 98; }
${PLACE_FUNCTION}while IFS= read -r __l; do
  case $__l in
    GO) break ;;
    'S '*)
      __n=\${__l#S }; __to=\${__n#* }; __n=\${__n%% *}
      place "$__to" && head -c "$__n" | tar -x --no-same-owner --no-same-permissions -C "$__to" ||
        { printf 'ERROR cannot copy a seed into %s\\n' "$__to" >&2; exit 99; } ;;
    *) printf 'ERROR unexpected seed line\\n' >&2; exit 99 ;;
  esac
done
unset __l __n __to
`;
}

/** The seeds as the prelude reads them, `GO` last. */
export async function seedFrames(
  seeds: readonly { from: string; to: string; skip?: readonly string[] }[],
): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const s of seeds) {
    if (/[\n\r]/.test(s.to) || !s.to.startsWith('/'))
      throw new SandboxError(`a seed's directory must be absolute, on one line: ${JSON.stringify(s.to)}`);
    const tar = await packTree(s.from, s.skip ?? []);
    parts.push(Buffer.from(`S ${tar.length} ${s.to}\n`), tar);
  }
  parts.push(Buffer.from('GO\n'));
  return Buffer.concat(parts);
}

/** A tar of the host tree `from` without `skip` (links kept as links), in memory. */
export function packTree(from: string, skip: readonly string[] = []): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tar = spawn('tar', ['-c', '-C', from, ...skip.flatMap((k) => ['--exclude', `./${k}`]), '.'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let err = '';
    tar.stdout.on('data', (d: Buffer) => chunks.push(d));
    tar.stderr.on('data', (d: Buffer) => (err.length < 4096 ? (err += d.toString('utf8')) : undefined));
    tar.on('error', (e) => reject(new SandboxError(`packing ${from}: ${e.message}`)));
    tar.on('close', (code) =>
      code === 0
        ? resolve(Buffer.concat(chunks))
        : reject(
            new SandboxError(
              `copying ${from} into the container failed (host tar exit ${code ?? 'none'}): ${err.trim().slice(0, 400)}`,
            ),
          ),
    );
  });
}
