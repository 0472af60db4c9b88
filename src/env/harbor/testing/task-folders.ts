import { writeFolderFiles } from '../write-folder.ts';

/** Test helper: writes a Harbor task folder from a map of relative paths to contents (*.sh executable). */
export const writeTaskFolder = writeFolderFiles;

export const TASK_TOML = `version = "1.0"
[agent]
timeout_sec = 60.0
[verifier]
timeout_sec = 30.0
[environment]
cpus = 1
memory_mb = 1024
`;

/** A small task: count the lines of a data file and write the count to /app/answer.txt. */
export function countLinesTask(dir: string, lines = 7): string {
  return writeTaskFolder(dir, {
    'instruction.md': 'Count the lines of /app/data/input.txt and write the number to /app/answer.txt.\n',
    'task.toml': TASK_TOML,
    'environment/data/input.txt': Array.from({ length: lines }, (_, i) => `row ${i}`).join('\n') + '\n',
    'tests/test.sh': [
      '#!/bin/bash',
      `if [ "$(cat /app/answer.txt 2>/dev/null)" = "${lines}" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi`,
      '',
    ].join('\n'),
    'solution/solve.sh': '#!/bin/bash\nwc -l < /app/data/input.txt | tr -d " " > /app/answer.txt\n',
  });
}
