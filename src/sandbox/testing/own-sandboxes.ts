import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { OWNER_LABEL, SANDBOX_LABEL } from '../docker-cli.ts';
import { spareNames } from '../docker/spare-containers.ts';
import { childrenOf } from './host-processes.ts';

/**
 * What this test process's sandboxes leave behind, for tests that check nothing is: its sandbox
 * containers (by the owner label naming this pid) and its bwrap children.
 */

/**
 * Ids of this process's sandbox containers: running ones, or with `all` stopped ones too. Spares
 * (docker/spare-containers.ts: started for later episodes, never used by one) are not counted.
 */
export function ownContainers(options: { all?: boolean } = {}): string[] {
  const args = ['ps', ...(options.all ? ['-a'] : []), '--filter', `label=${SANDBOX_LABEL}`];
  const spares = spareNames();
  return spawnSync('docker', [...args, '--format', `{{.ID}} {{.Names}} {{.Label "${OWNER_LABEL}"}}`], {
    encoding: 'utf8',
  })
    .stdout.split('\n')
    .filter((l) => l.includes(`/${process.pid}.`) && !spares.has(l.split(' ')[1]!))
    .map((l) => l.split(' ')[0]!);
}

/** Host pids of the bwrap processes this process started that are still there. */
export function ownBwraps(): number[] {
  return childrenOf(process.pid).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'bwrap';
    } catch {
      return false;
    }
  });
}
