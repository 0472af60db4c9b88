import { mixSeed, Rng } from '../../util/random.ts';
import { VALUE_WORDS } from '../value-words.ts';
import type { ShellLedgerKnobs } from './knobs.ts';

/**
 * A shell-ledger task: a service's change log split into part files under /app/log. Each line
 * sets a setting (`set port tiger`), unsets one (`unset port`), or is a comment (`# ...`); the
 * last part ends with the line `end of log`. The agent applies the parts in order and writes the
 * final setting of one key (`port tiger`, or `port none`) to /app/answer.txt.
 *
 * Values are value words (src/env/value-words.ts, one Qwen3 token each) and the log marks its own
 * end, so that what must survive a compaction is the goal and a value, not digits to copy or a
 * part count to compare against (docs/decisions/0027-shell-ledger-words.md).
 */
export type LedgerLine =
  { kind: 'set'; key: string; value: string } | { kind: 'unset'; key: string } | { kind: 'comment'; words: string[] };

export interface ShellLedgerTask {
  key: string;
  parts: LedgerLine[][]; // [parts][linesPerPart]
  /** The setting's final value: a value word, or 'none'. */
  value: string;
  /** The expected content of /app/answer.txt: `${key} ${value}`. */
  answer: string;
}

/** The line that ends the last part. */
export const END_OF_LOG = 'end of log';

export const SETTINGS = ['port', 'host', 'mode', 'user', 'level', 'limit', 'region', 'owner', 'cache', 'quota'];
const COMMENT_WORDS = ['checked', 'by', 'ops', 'after', 'deploy', 'rollback', 'ticket', 'review', 'night', 'shift'];
const FAMILY_SALT = 0x7368; // keeps this family's tasks apart from other families at equal seeds

export function lineText(line: LedgerLine): string {
  if (line.kind === 'set') return `set ${line.key} ${line.value}`;
  if (line.kind === 'unset') return `unset ${line.key}`;
  return `# ${line.words.join(' ')}`;
}

/** Part i's file text (0-based), as `cat` prints it: the last part ends with END_OF_LOG. */
export function partText(task: Pick<ShellLedgerTask, 'parts'>, i: number): string {
  const lines = task.parts[i]!.map(lineText);
  if (i === task.parts.length - 1) lines.push(END_OF_LOG);
  return lines.join('\n') + '\n';
}

export const partPath = (i: number): string => `log/part-${i}.txt`;

/** Seeded generator: the same (seed, knobs) always gives the same task. */
export function generateShellLedger(seed: number, k: ShellLedgerKnobs): ShellLedgerTask {
  const rng = new Rng(mixSeed(FAMILY_SALT, seed));
  const pool = rng.shuffle([...SETTINGS]).slice(0, k.keys);
  const n = k.minParts + rng.int(k.maxParts - k.minParts + 1);
  const live = new Map<string, string>();
  const everSet = new Set<string>();
  const lastTouch = new Map<string, number>();
  const parts: LedgerLine[][] = [];
  for (let p = 0; p < n; p++) {
    const lines: LedgerLine[] = [];
    for (let i = 0; i < k.linesPerPart; i++) {
      const r = rng.next();
      const liveKeys = [...live.keys()];
      const free = pool.filter((x) => !live.has(x));
      let line: LedgerLine;
      if (r < k.commentRate) line = { kind: 'comment', words: [0, 1, 2].map(() => rng.pick(COMMENT_WORDS)) };
      else if (liveKeys.length > 0 && r < k.commentRate + k.unsetRate)
        line = { kind: 'unset', key: rng.pick(liveKeys) };
      else line = { kind: 'set', key: rng.pick(free.length > 0 ? free : pool), value: rng.pick(VALUE_WORDS) };
      if (line.kind === 'set') {
        live.set(line.key, line.value);
        everSet.add(line.key);
      } else if (line.kind === 'unset') live.delete(line.key);
      if (line.kind !== 'comment') lastTouch.set(line.key, p);
      lines.push(line);
    }
    parts.push(lines);
  }
  // Ask about the live setting left untouched longest: its value lies furthest back, so it must
  // survive compaction (method §2). An unset or never-set one ('none') only when nothing is live:
  // a policy that lost the goal and guesses 'none' should not pass by luck.
  const byAge = (keys: string[]) => rng.shuffle(keys).sort((a, b) => lastTouch.get(a)! - lastTouch.get(b)!);
  const candidates = [...byAge([...live.keys()]), ...byAge([...everSet].filter((x) => !live.has(x)))];
  for (const x of rng.shuffle([...pool])) if (!everSet.has(x)) candidates.push(x);
  const key = candidates[0]!;
  const value = live.get(key) ?? 'none';
  return { key, parts, value, answer: `${key} ${value}` };
}
