import { join } from 'node:path';
import { TEST_BASE_IMAGE } from '../../../sandbox/testing/docker-available.ts';
import { writeTaskFolder } from './task-folders.ts';

/**
 * Test helper: Harbor task folders for the verifier's lifecycle (docs/harbor.md, "The verifier
 * runs alone"; docs/faults.md, "Whose fault"). Each solution/solve.sh plays the agent: it writes
 * /app/prog.sh, the code under test, which tests/test.sh runs while it grades. Every folder runs
 * on both backends (its Dockerfile's WORKDIR is the bwrap workspace, /app).
 */

const R = '/logs/verifier/reward.txt';

/**
 * A daemon the code under test leaves (new session, no terminal): once test.sh has exited it
 * turns a 0 in reward.txt into 1, checking every 2 s, and runs on. `tag` is an argument of its
 * command line, so the host can find it. The first check comes 2 s after test.sh's exit: a write
 * sooner than the kill after the verifier no kill can stop (docs/harbor.md), and the test is about
 * what outlives it (with the old code the daemon still ran when verify returned).
 */
export const daemonProgram = (tag: string): string =>
  `setsid -f bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.05; done; ` +
  `while :; do sleep 2; [ "$(cat ${R} 2>/dev/null)" = 0 ] && echo 1 > ${R}; done' ${tag} "$PPID" ` +
  '> /dev/null 2>&1 < /dev/null';

/** What the code under test does to the reward file test.sh wrote (0), for the "whose fault" cases. */
export const BROKEN_REWARDS: Record<string, string> = {
  'not-a-number': `echo oops > ${R}`,
  directory: `rm -f ${R}; mkdir ${R}`,
  link: `rm -f ${R}; echo 1 > /app/one; ln -s /app/one ${R}`,
  oversized: `head -c 100000 /dev/zero | tr '\\0' 1 > ${R}`,
  // Everything but the sandbox's first process, the verifier's own shells included.
  'kill-everything': 'kill -9 -1',
};

const toml = (verifierSec: number, extra = '') =>
  `[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = ${verifierSec}.0\n[environment]\nmemory_mb = 512\nallow_internet = false\n${extra}`;

/** A folder whose test.sh writes 0, then runs the agent's /app/prog.sh (written by solve.sh). */
export function verifierTask(
  root: string,
  name: string,
  options: { program: string; testSh?: string; verifierSec?: number },
): string {
  return writeTaskFolder(join(root, name), {
    'instruction.md': 'Write /app/prog.sh.\n',
    'task.toml': toml(options.verifierSec ?? 30),
    'environment/Dockerfile': `FROM ${TEST_BASE_IMAGE}\nWORKDIR /app\n`,
    'environment/keep.txt': 'k\n',
    'tests/test.sh': options.testSh ?? `#!/bin/bash\necho 0 > ${R}\nbash /app/prog.sh\n`,
    'solution/solve.sh': `#!/bin/bash\ncat > /app/prog.sh <<'CRL_PROG'\n${options.program}\nCRL_PROG\n`,
  });
}

/**
 * A signed task (`[metadata] verdict = "signed"`) whose grader, in python3, reads and unlinks
 * /tests/.verdict-key first, then runs the agent's /app/prog.sh, then signs its verdict as
 * /app/mode says: `good` (reward.txt then reward.sig, the contract), `unsigned` (reward 1, no
 * signature), `wrong-key` (signed with another key), `tamper` (0 signed, then prog.sh's second
 * half, which writes 1). The verdict is 1 only when the key was 64 lowercase hex characters and
 * a newline, mode 0600, and gone from /tests when prog.sh ran.
 */
export function signedTask(root: string, name: string): string {
  const grader = `import hashlib, hmac, os, stat, subprocess
p = '/tests/.verdict-key'
mode_bits = stat.S_IMODE(os.stat(p).st_mode)
with open(p) as f:
    text = f.read()
os.unlink(p)
key = bytes.fromhex(text[:64])
ok = len(text) == 65 and text.endswith('\\n') and all(c in '0123456789abcdef' for c in text[:64]) and mode_bits == 0o600
seen = subprocess.run(['bash', '/app/prog.sh', 'grade'], capture_output=True, text=True).stdout.strip()
ok = ok and seen == 'key gone'
mode = open('/app/mode').read().strip()
reward = b'1\\n' if ok and mode != 'tamper' else b'0\\n'
sig_key = os.urandom(32) if mode == 'wrong-key' else key
with open('${R}', 'wb') as f:
    f.write(reward)
if mode != 'unsigned':
    with open('/logs/verifier/reward.sig', 'w') as f:
        f.write(hmac.new(sig_key, reward, hashlib.sha256).hexdigest() + '\\n')
if mode == 'tamper':
    subprocess.run(['bash', '/app/prog.sh', 'after'])
`;
  return writeTaskFolder(join(root, name), {
    'instruction.md': 'Write /app/prog.sh.\n',
    'task.toml': toml(30, '[metadata]\nverdict = "signed"\n'),
    'environment/Dockerfile': `FROM ${TEST_BASE_IMAGE}\nWORKDIR /app\n`,
    'environment/keep.txt': 'k\n',
    'tests/test.sh': `#!/bin/bash\npython3 - <<'CRL_GRADER'\n${grader}CRL_GRADER\n`,
    'tests/grader-note.txt': 'the grader is inline in test.sh\n',
    // The agent: the code under test says whether it can see the key, and in `tamper` rewrites the verdict.
    'solution/solve.sh': [
      '#!/bin/bash',
      "cat > /app/prog.sh <<'CRL_PROG'",
      'if [ "$1" = after ]; then echo 1 > /logs/verifier/reward.txt; exit 0; fi',
      '[ -e /tests/.verdict-key ] && echo key visible || echo key gone',
      'CRL_PROG',
      '',
    ].join('\n'),
  });
}
