import type { FaultKind } from '../../contracts/index.ts';
import type { SandboxSession } from '../../sandbox/backend.ts';

/**
 * Reads the verifier's reward from /logs/verifier: reward.txt (one number) or reward.json (named
 * numbers: `reward` if present, else the only value, else their mean). The files were written
 * inside the sandbox, so they are read only if they are small regular files (no link followed:
 * SandboxSession.readFile).
 *
 * A reward is a finite decimal number (`1`, `0.5`, `-2`, `1e-3`; no hex, `Infinity` or `NaN`) of
 * magnitude at most MAX_REWARD: the verifier writes a score, and anything else (`0x10`, `1e308`)
 * is a broken verifier, reported as 'invalid' (the episode is an env error naming the file).
 */
export interface RewardReading {
  reward: number;
  /** Which file it came from, or why there is none. */
  source: 'reward.txt' | 'reward.json' | 'missing' | 'invalid';
  detail?: string;
}

const MAX_BYTES = 64 * 1024;
const VERIFIER_DIR = '/logs/verifier';
/** Largest reward magnitude accepted: far above any score (Harbor's are 0..1), far below overflow. */
export const MAX_REWARD = 1e6;
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The text as a reward, or null when it is not a plain decimal number within ±MAX_REWARD. */
export function parseRewardNumber(text: string): number | null {
  const t = text.trim();
  if (!DECIMAL.test(t)) return null;
  return checkReward(Number(t));
}

function checkReward(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= MAX_REWARD ? v : null;
}

/**
 * The verifier ran but its reward cannot be known (the sandbox could not be asked for the file,
 * or the file is not a reward): a fault of kind 'verifier', never a score of 0 (docs/faults.md).
 */
export class VerifierFaultError extends Error {
  readonly faultKind: FaultKind = 'verifier';
  constructor(message: string) {
    super(message);
    this.name = 'VerifierFaultError';
  }
}

/** The reward; rejects with VerifierFaultError when a file could not be read (absent is not that: 'missing'). */
export async function readReward(sandbox: SandboxSession): Promise<RewardReading> {
  const read = async (name: string) => {
    const path = `${VERIFIER_DIR}/${name}`;
    let bytes: Buffer | null;
    try {
      bytes = await sandbox.readFile(path, { maxBytes: MAX_BYTES });
    } catch (e) {
      throw new VerifierFaultError(`the verifier's ${path} could not be read: ${(e as Error).message}`);
    }
    return bytes?.toString('utf8') ?? null;
  };
  return parseReward({ txt: await read('reward.txt'), json: await read('reward.json') });
}

/** The reward from the two files' texts (null: absent or unreadable). */
export function parseReward(files: { txt: string | null; json: string | null }): RewardReading {
  const { txt, json } = files;
  if (txt !== null) {
    const value = parseRewardNumber(txt);
    return value !== null
      ? { reward: value, source: 'reward.txt' }
      : {
          reward: 0,
          source: 'invalid',
          detail: `reward.txt holds ${JSON.stringify(txt.trim().slice(0, 80))}, not a decimal number within ±${MAX_REWARD}`,
        };
  }
  if (json !== null) return rewardFromJson(json);
  return { reward: 0, source: 'missing', detail: 'tests/test.sh wrote neither reward.txt nor reward.json' };
}

/** reward.json: a number, or a flat object of numbers (`reward` if present, else their mean). */
function rewardFromJson(json: string): RewardReading {
  const invalid = (why: string): RewardReading => ({ reward: 0, source: 'invalid', detail: `reward.json ${why}` });
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return invalid('is not valid JSON');
  }
  const values = typeof parsed === 'number' ? { reward: parsed } : parsed;
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    return invalid('must be a number or an object of named numbers');
  const entries = Object.entries(values as Record<string, unknown>);
  if (entries.length === 0) return invalid('holds no number');
  for (const [k, v] of entries)
    if (checkReward(v) === null)
      return invalid(`value ${JSON.stringify(k)} is not a finite number within ±${MAX_REWARD}`);
  const numbers = entries as [string, number][];
  const named = numbers.find(([k]) => k === 'reward');
  if (named) return { reward: named[1], source: 'reward.json' };
  return { reward: numbers.reduce((a, [, v]) => a + v, 0) / numbers.length, source: 'reward.json' };
}
