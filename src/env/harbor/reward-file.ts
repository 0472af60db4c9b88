import type { SandboxSession } from '../../sandbox/backend.ts';

/**
 * Reads the verifier's reward from /logs/verifier: reward.txt (one number) or reward.json (named
 * numbers: `reward` if present, else the only value, else their mean). The files were written
 * inside the sandbox, so they are read only if they are small regular files (no link followed:
 * SandboxSession.readFile).
 */
export interface RewardReading {
  reward: number;
  /** Which file it came from, or why there is none. */
  source: 'reward.txt' | 'reward.json' | 'missing' | 'invalid';
  detail?: string;
}

const MAX_BYTES = 64 * 1024;
const VERIFIER_DIR = '/logs/verifier';

export async function readReward(sandbox: SandboxSession): Promise<RewardReading> {
  const read = async (name: string) =>
    (await sandbox.readFile(`${VERIFIER_DIR}/${name}`, { maxBytes: MAX_BYTES }))?.toString('utf8') ?? null;
  return parseReward({ txt: await read('reward.txt'), json: await read('reward.json') });
}

/** The reward from the two files' texts (null: absent or unreadable). */
export function parseReward(files: { txt: string | null; json: string | null }): RewardReading {
  const { txt, json } = files;
  if (txt !== null) {
    const value = Number(txt.trim());
    return Number.isFinite(value) && txt.trim() !== ''
      ? { reward: value, source: 'reward.txt' }
      : { reward: 0, source: 'invalid', detail: `reward.txt holds ${JSON.stringify(txt.slice(0, 80))}` };
  }
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
