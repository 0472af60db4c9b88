import { GeneratedFolderEnv } from '../harbor/generated-folder-env.ts';
import { generateRepoRepair, type RepoRepairTask } from './generate.ts';
import { repoRepairKnobs, type RepoRepairKnobs } from './knobs.ts';
import { writeTaskFolder } from './task-folder.ts';

/**
 * repo-repair as an Environment: its task folders run in the sandbox (generated-folder-env.ts;
 * the pristine tests arrive with the verifier's files, only at submit).
 */
export class RepoRepairEnv extends GeneratedFolderEnv<RepoRepairTask, RepoRepairKnobs> {
  constructor(knobs: Partial<RepoRepairKnobs> = {}) {
    super(
      {
        name: 'repo-repair',
        schema: repoRepairKnobs,
        generate: generateRepoRepair,
        writeTaskFolder,
        commandTimeoutSec: 30,
      },
      knobs,
    );
  }
}
