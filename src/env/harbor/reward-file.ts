import type { FaultKind } from '../../contracts/index.ts';
import type { SandboxSession } from '../../sandbox/backend.ts';
import { signatureProblem } from './verdict-key.ts';
import { AgentFaultError } from '../../sandbox/sandbox-types.ts';

/**
 * Reads the verifier's reward from /logs/verifier: reward.txt (one number) or reward.json (named
 * numbers: `reward` if present, else the only value, else their mean); for a signed task
 * (verdict-key.ts) reward.txt with its reward.sig. The files were written inside the sandbox, so
 * they are read only if they are small regular files (no link followed: SandboxSession.readFile),
 * each once, after everything inside was killed (SandboxSession.runFresh): nothing can change them
 * between the read and the verdict.
 *
 * A reward is a finite decimal number (`1`, `0.5`, `-2`, `1e-3`; no hex, `Infinity` or `NaN`) of
 * magnitude at most MAX_REWARD. Anything else ('invalid'), an absent or unreadable file
 * ('missing') and a signed task's reward without its valid signature ('unsigned') are reward 0,
 * the agent's failure: the code under test ran while the verifier did, and can write, replace or
 * remove these files (docs/faults.md, "Whose fault"). Only a sandbox that could not be asked is a
 * fault (VerifierFaultError).
 */
export interface RewardReading {
  reward: number;
  /** Which file it came from, or why there is none. */
  source: 'reward.txt' | 'reward.json' | 'missing' | 'invalid' | 'unsigned';
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
 * The verifier ran but its reward cannot be known because the sandbox could not be asked for the
 * file (its container is gone, the daemon did not answer): a fault of kind 'verifier', never a
 * score of 0 (docs/faults.md).
 */
export class VerifierFaultError extends Error {
  readonly faultKind: FaultKind = 'verifier';
  constructor(message: string) {
    super(message);
    this.name = 'VerifierFaultError';
  }
}

/** The verifier's files as written (null: absent, or not a small regular file). */
export interface VerifierFiles {
  txt: Buffer | null;
  json: Buffer | null;
  sig: Buffer | null;
}

/** Reads each file once; rejects with VerifierFaultError when the sandbox could not be asked. */
export async function readVerifierFiles(sandbox: SandboxSession): Promise<VerifierFiles> {
  const read = async (name: string) => {
    const path = `${VERIFIER_DIR}/${name}`;
    try {
      return await sandbox.readFile(path, { maxBytes: MAX_BYTES });
    } catch (e) {
      // Processes that outlived the sweep before the read (the docker backend sweeps in the same exec): the agent's failure.
      if (e instanceof AgentFaultError) throw e;
      throw new VerifierFaultError(`the verifier's ${path} could not be read: ${(e as Error).message}`);
    }
  };
  return { txt: await read('reward.txt'), json: await read('reward.json'), sig: await read('reward.sig') };
}

/**
 * The reward the files give. With a key (a signed task) only reward.txt counts, and only with a
 * reward.sig that signs its bytes under that key; reward.json is not read.
 */
export function verdictOf(files: VerifierFiles, key: Buffer | null): RewardReading {
  const text = (b: Buffer | null) => b?.toString('utf8') ?? null;
  if (key === null) return parseReward({ txt: text(files.txt), json: text(files.json) });
  const problem = signatureProblem(key, files.txt, files.sig);
  if (problem !== null) return { reward: 0, source: 'unsigned', detail: problem };
  return parseReward({ txt: text(files.txt), json: null });
}

/** The reward; rejects with VerifierFaultError when a file could not be read (absent is not that: 'missing'). */
export async function readReward(sandbox: SandboxSession): Promise<RewardReading> {
  return verdictOf(await readVerifierFiles(sandbox), null);
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
  return {
    reward: 0,
    source: 'missing',
    detail: 'no reward.txt or reward.json to read (absent, not a regular file, or over 64 KiB)',
  };
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
