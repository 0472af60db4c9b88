import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crl } from '../../cli/testing/spawn-crl.ts';
import { readRecordsFile } from '../../rollout/record-file.ts';
import { dockerAvailable, TEST_BASE_IMAGE } from '../../sandbox/testing/docker-available.ts';

/**
 * repo-repair's task folders in containers: `crl export-tasks --docker-image` writes an
 * environment/Dockerfile FROM an image with python3 and pytest (here the offline test base image,
 * which scripts/docker-setup.sh builds with Debian's python3-pytest), and the folders are graded
 * there as on bubblewrap: harbor-oracle's solve.sh passes every FAIL_TO_PASS and PASS_TO_PASS test,
 * an agent that only submits passes none.
 */
const available = dockerAvailable('repo-repair task folders on docker', { basePackages: ['python3-pytest'] });
const root = mkdtempSync(join(tmpdir(), 'crl-repo-repair-docker-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(!available)('repo-repair task folders with a Dockerfile, in containers', () => {
  it('crl run --sandbox docker: harbor-oracle passes the task, harbor-nop does not', () => {
    const suite = join(root, 'suite');
    const e = crl([
      'export-tasks',
      '--env',
      'repo-repair',
      '--count',
      '2',
      '--docker-image',
      TEST_BASE_IMAGE,
      '--out',
      suite,
    ]);
    expect(e.code, e.stderr).toBe(0);
    const folder = JSON.parse(e.last) as { out: string };
    expect(folder.out).toBe(suite);
    const run = (policy: string) => {
      const out = join(root, `${policy}.jsonl`);
      const r = crl(
        ['run', '--env', `harbor:${suite}`, '--sandbox', 'docker', '--policy', policy, '--episodes', '1', '--out', out],
        {
          timeoutMs: 280_000,
        },
      );
      expect(r.code, r.stderr).toBe(0);
      return { summary: JSON.parse(r.last) as Record<string, unknown>, records: readRecordsFile(out) };
    };
    const oracle = run('harbor-oracle');
    expect(oracle.summary).toMatchObject({ passAt1: 1, episodes: 1, envErrors: 0 });
    expect(oracle.records.map((r) => r.reward)).toEqual([1]);
    const nop = run('harbor-nop');
    expect(nop.summary).toMatchObject({ passAt1: 0, episodes: 1, envErrors: 0 });
    // The Dockerfile copies the repository entry by entry: its build files never reach /app.
    const dockerfile = readFileSync(join(suite, readdirSync(suite).sort()[0]!, 'environment', 'Dockerfile'), 'utf8');
    expect(dockerfile).toContain(`FROM ${TEST_BASE_IMAGE}\nWORKDIR /app\n`);
    expect(dockerfile).not.toMatch(/COPY \. /);
  }, 600_000); // two crl processes, an image build and two containers: minutes on a busy machine
});
