import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The signed verdict (docs/harbor.md, "Signed verdicts"): a task whose task.toml says
 * `[metadata] verdict = "signed"` gets, for each verification, a fresh key in /tests/.verdict-key
 * (64 lowercase hex characters and a newline, mode 0600: the sandbox's own user only). Its grader
 * reads and unlinks the key before anything else runs, and after deciding writes reward.txt and
 * then reward.sig: the lowercase hex HMAC-SHA256 of reward.txt's exact bytes under the key's 32
 * bytes, and a newline. A reward without a valid signature is the agent's failure: the code under
 * test killed or bypassed the grader, which then never signed.
 */
export const VERDICT_KEY_FILE = '.verdict-key';
const SIG = /^([0-9a-f]{64})\n?$/;

/** 32 fresh random bytes: one verification's key. */
export function newVerdictKey(): Buffer {
  return randomBytes(32);
}

/** reward.sig's text for reward.txt's bytes: what a grader writes. */
export function signVerdict(key: Buffer, reward: Buffer): string {
  return `${createHmac('sha256', key).update(reward).digest('hex')}\n`;
}

/** Why reward.txt does not carry the grader's signature, or null when it does. */
export function signatureProblem(key: Buffer, reward: Buffer | null, sig: Buffer | null): string | null {
  if (reward === null) return 'the signed verdict has no readable reward.txt';
  if (sig === null) return 'reward.txt is not signed (no readable reward.sig): the grader did not sign it';
  const m = SIG.exec(sig.toString('latin1'));
  if (!m) return 'reward.sig is not 64 lowercase hex characters: the grader did not sign reward.txt';
  const want = createHmac('sha256', key).update(reward).digest();
  const got = Buffer.from(m[1]!, 'hex');
  return timingSafeEqual(want, got) ? null : "reward.sig does not match reward.txt under this episode's key";
}

/**
 * A host copy of the task's tests/ with the key file added (0600), for SandboxSession.copyIn;
 * remove() deletes it. The copy is made in a fresh private directory (0700) of the host's temp.
 */
export function testsWithKey(testsDir: string, key: Buffer): { dir: string; remove: () => void } {
  const holder = mkdtempSync(join(tmpdir(), 'crl-verdict-'));
  const dir = join(holder, 'tests');
  try {
    cpSync(testsDir, dir, { recursive: true, verbatimSymlinks: true });
    rmSync(join(dir, VERDICT_KEY_FILE), { force: true }); // a task's own file of that name gives way
    writeFileSync(join(dir, VERDICT_KEY_FILE), `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    rmSync(holder, { recursive: true, force: true });
    throw e;
  }
  return { dir, remove: () => rmSync(holder, { recursive: true, force: true }) };
}
