import { writeFolderFiles } from '../harbor/write-folder.ts';
import { stringify as toToml } from 'smol-toml';
import { END_OF_LOG, partPath, partText, type ShellLedgerTask } from './generate.ts';

/**
 * A shell-ledger task as a Harbor task folder (docs/harbor.md), so generated tasks run through
 * the same loader, sandbox and verifier as any task folder. The expected answer lives only in
 * tests/test.sh, which the agent never sees.
 */
export function instructionText(task: Pick<ShellLedgerTask, 'key'>): string {
  return (
    `The change log of a service is split into /app/${partPath(1)} , /app/${partPath(2)} and so on ; ` +
    `the last part ends with ${END_OF_LOG} . Read the parts in order , one command per turn , and write ` +
    `the final setting of ${task.key} to /app/answer.txt as ${task.key} and its value ( ${task.key} none if it ends unset ) . ` +
    `Then submit .`
  );
}

export function taskFolderFiles(task: ShellLedgerTask, name: string): Record<string, string> {
  const files: Record<string, string> = {
    'instruction.md': instructionText(task) + '\n',
    'task.toml': toToml({
      version: '1.0',
      task: { name },
      metadata: { family: 'shell-ledger', action_hint: false },
      agent: { timeout_sec: 300 },
      verifier: { timeout_sec: 30 },
      environment: { build_timeout_sec: 30, cpus: 1, memory_mb: 512, allow_internet: false },
    }),
    'tests/test.sh': [
      '#!/bin/bash',
      '# Reward 1 iff /app/answer.txt holds the final setting, key then value (runs of whitespace are one space).',
      `got=$(tr -s '[:space:]' ' ' < /app/answer.txt 2>/dev/null | sed 's/^ //; s/ $//')`,
      `if [ "$got" = "${task.answer}" ]; then`,
      '  echo 1 > /logs/verifier/reward.txt',
      'else',
      '  echo 0 > /logs/verifier/reward.txt',
      'fi',
      '',
    ].join('\n'),
    'solution/solve.sh': [
      '#!/bin/bash',
      '# Apply every part in order, up to the one that ends the log; the last set or unset of the setting wins.',
      'v=none',
      'i=1',
      'while [ -f "/app/log/part-$i.txt" ]; do',
      '  while read -r op key value; do',
      `    [ "$key" = "${task.key}" ] || continue`,
      '    case "$op" in set) v=$value ;; unset) v=none ;; esac',
      '  done < "/app/log/part-$i.txt"',
      `  grep -qx '${END_OF_LOG}' "/app/log/part-$i.txt" && break`,
      '  i=$((i + 1))',
      'done',
      `echo "${task.key} $v" > /app/answer.txt`,
      '',
    ].join('\n'),
  };
  task.parts.forEach((_, i) => (files[`environment/${partPath(i + 1)}`] = partText(task, i)));
  return files;
}

/** Writes the folder (scripts executable). */
export function writeTaskFolder(dir: string, task: ShellLedgerTask, name: string): string {
  return writeFolderFiles(dir, taskFolderFiles(task, name));
}
