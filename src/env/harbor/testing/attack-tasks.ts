import { join } from 'node:path';
import { TEST_BASE_IMAGE } from '../../../sandbox/testing/docker-available.ts';
import { writeTaskFolder } from './task-folders.ts';

/**
 * Test helper: Harbor task folders whose solution/solve.sh plays a malicious agent (docs/sandbox.md,
 * "What the agent can attack") and whose tests/test.sh always writes 0, so any other reward is an
 * attack that worked. Each folder runs on both backends: its Dockerfile's WORKDIR is the bwrap
 * workspace, /app. The supervisor is pid 1 on both; its replies go to fd 2 on docker and fd 4 on
 * bwrap, so the forgeries write both.
 */

/** A survivor: a process that outlives the agent's command (new session, no terminal, output gone). */
const survivor = (body: string): string =>
  `nohup setsid bash -c ${JSON.stringify(body)} > /dev/null 2>&1 < /dev/null &`;

/** The reward file written over and over: a survivor's payload. */
const WRITE_ONE = 'echo 1 > /logs/verifier/reward.txt 2>/dev/null';

export const ATTACKS: Record<string, string> = {
  // Replaces the verifier as soon as /tests appears.
  'replace-tests': survivor(
    `while :; do [ -d /tests ] && printf '#!/bin/bash\\n${WRITE_ONE}\\n' > /tests/test.sh 2>/dev/null; sleep 0.01; done`,
  ),
  // One byte that spoils the host's next control line, then a forged reply to it.
  'forge-reply': [
    survivor(`while :; do ${WRITE_ONE}; sleep 0.02; done`),
    'printf Z > /proc/1/fd/0 2>/dev/null',
    "for fd in 2 4; do printf 'SWEPT 0\\n' > /proc/1/fd/$fd 2>/dev/null; done",
    'true',
  ].join('\n'),
  // Control lines that would run a payload as a fresh verifier shell, sent until the agent dies.
  'inject-verifier': survivor(
    `p=$(printf '%q' 'for i in $(seq 200); do ${WRITE_ONE}; sleep 0.05; done'); ` +
      `while :; do printf 'CV %s x\\nV %s x\\n' "$p" "$p" > /proc/1/fd/0 2>/dev/null; sleep 0.01; done`,
  ),
  // Writers that fill /logs/verifier from the start, so clearing it races with them.
  'crowd-logs': Array.from({ length: 4 }, (_, i) =>
    survivor(`while :; do mkdir -p /logs/verifier/d${i}/e && : > /logs/verifier/d${i}/e/f; done`),
  ).join('\n'),
  // Its files in the verifier's way: /logs/verifier a link, /logs a file where the backend allows it.
  'block-logs': 'rm -rf /logs/verifier; ln -s /etc /logs/verifier; rm -rf /logs 2>/dev/null && echo x > /logs; true',
  // 200 MB without a newline where the supervisor's replies go, then a reply-like prefix.
  'flood-replies':
    "for fd in 2 4; do head -c 200000000 /dev/zero | tr '\\0' Z > /proc/1/fd/$fd 2>/dev/null; done\nfor fd in 2 4; do printf 'SWEPT ' > /proc/1/fd/$fd 2>/dev/null; done\ntrue",
  // Five 40 MB files under storage_mb = 50 (TOML_EXTRA).
  'fill-disk': 'for i in 1 2 3 4 5; do head -c 40000000 /dev/zero > /app/fill$i; done\ntrue',
  // A fork bomb left running.
  'fork-bomb': "bash -c ':(){ :|:& };:' > /dev/null 2>&1 &\nsleep 2\ntrue",
};

/** task.toml lines an attack needs. */
const TOML_EXTRA: Record<string, string> = { 'fill-disk': 'storage_mb = 50\n' };

export function attackTask(root: string, name: string): string {
  return writeTaskFolder(join(root, name), {
    'instruction.md': 'Write the word done to /app/answer.txt.\n',
    'task.toml':
      '[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n[environment]\nmemory_mb = 512\nallow_internet = false\n' +
      (TOML_EXTRA[name] ?? ''),
    'environment/Dockerfile': `FROM ${TEST_BASE_IMAGE}\nWORKDIR /app\n`,
    'environment/keep.txt': 'k\n',
    'tests/test.sh': '#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n',
    'solution/solve.sh': `#!/bin/bash\n${ATTACKS[name]}\n`,
  });
}
