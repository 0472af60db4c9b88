import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Reads the verifier's reward from the host side of /logs/verifier: reward.txt (one number) or
 * reward.json (named numbers: `reward` if present, else the only value, else their mean). The
 * files were written inside the sandbox, so they are opened without following links and only if
 * they are small regular files.
 */
export interface RewardReading {
  reward: number;
  /** Which file it came from, or why there is none. */
  source: 'reward.txt' | 'reward.json' | 'missing' | 'invalid';
  detail?: string;
}

const MAX_BYTES = 64 * 1024;

export function readReward(verifierDir: string): RewardReading {
  const dirStat = safeLstat(verifierDir);
  if (!dirStat?.isDirectory()) return { reward: 0, source: 'missing', detail: '/logs/verifier is not a directory' };
  const txt = readSmallFile(join(verifierDir, 'reward.txt'));
  if (txt !== null) {
    const value = Number(txt.trim());
    return Number.isFinite(value) && txt.trim() !== ''
      ? { reward: value, source: 'reward.txt' }
      : { reward: 0, source: 'invalid', detail: `reward.txt holds ${JSON.stringify(txt.slice(0, 80))}` };
  }
  const json = readSmallFile(join(verifierDir, 'reward.json'));
  if (json !== null) {
    try {
      const parsed = JSON.parse(json) as unknown;
      const values =
        typeof parsed === 'number' ? { reward: parsed } : ((parsed as Record<string, unknown> | null) ?? {});
      const numbers = Object.entries(values).filter((e): e is [string, number] => typeof e[1] === 'number');
      const named = numbers.find(([k]) => k === 'reward');
      if (named && Number.isFinite(named[1])) return { reward: named[1], source: 'reward.json' };
      if (numbers.length > 0) {
        const mean = numbers.reduce((a, [, v]) => a + v, 0) / numbers.length;
        if (Number.isFinite(mean)) return { reward: mean, source: 'reward.json' };
      }
      return { reward: 0, source: 'invalid', detail: 'reward.json holds no number' };
    } catch (e) {
      return { reward: 0, source: 'invalid', detail: `reward.json: ${(e as Error).message}` };
    }
  }
  return { reward: 0, source: 'missing', detail: 'tests/test.sh wrote neither reward.txt nor reward.json' };
}

function safeLstat(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** The file's text, or null when it is absent, not a regular file (a link included) or too large. */
function readSmallFile(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_BYTES) return null;
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, st.size, 0);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
