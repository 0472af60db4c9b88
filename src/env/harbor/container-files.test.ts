import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { addContainerFiles, dockerfileText, ImageRefSchema } from './container-files.ts';
import { loadHarborTask } from './load-tasks.ts';
import { TASK_TOML, writeTaskFolder } from './testing/task-folders.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-container-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('container build files for a task folder', () => {
  it('accepts image references and refuses what would break the FROM line', () => {
    for (const ok of [
      'python:3.11-slim',
      'crl-test/debian:bookworm',
      'localhost:5000/team/img:v1',
      `a@sha256:${'0'.repeat(64)}`,
    ]) {
      expect(ImageRefSchema.safeParse(ok).success, ok).toBe(true);
    }
    for (const bad of ['', 'a b', 'img\nRUN rm -rf /', '--privileged', 'Upper/Case', 'img:tag:tag']) {
      expect(ImageRefSchema.safeParse(bad).success, bad).toBe(false);
    }
  });

  it('copies each entry of environment/ to /app, in a stable order, never the build files', () => {
    expect(dockerfileText('python:3.11-slim', ['tests', 'calc'])).toBe(
      [
        "# The starting state for container runtimes: python:3.11-slim must provide the task's tools.",
        '# environment/setup.sh stands in for this file on the bubblewrap sandbox.',
        'FROM python:3.11-slim',
        'WORKDIR /app',
        'COPY ["calc","/app/calc"]',
        'COPY ["tests","/app/tests"]',
        '',
      ].join('\n'),
    );
  });

  it('writes a Dockerfile and an executable setup.sh that both backends accept; refuses to write them twice', () => {
    const dir = writeTaskFolder(join(root, 't'), {
      'instruction.md': 'Count.\n',
      'task.toml': TASK_TOML,
      'environment/data.txt': '1\n2\n',
      'tests/test.sh': '#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n',
    });
    addContainerFiles(dir, 'crl-test/debian:bookworm');
    expect(readFileSync(join(dir, 'environment', 'Dockerfile'), 'utf8')).toContain('COPY ["data.txt","/app/data.txt"]');
    expect(statSync(join(dir, 'environment', 'setup.sh')).mode & 0o111).not.toBe(0);
    const task = loadHarborTask(dir);
    expect(task.dockerfile).toBe(true);
    expect(task.setupScript).not.toBeNull();
    expect([...task.environmentSkip].sort()).toEqual(['Dockerfile', 'setup.sh']);
    expect(() => addContainerFiles(dir, 'crl-test/debian:bookworm')).toThrow(/already has Dockerfile/);
    const empty = writeTaskFolder(join(root, 'e'), {
      'instruction.md': 'x\n',
      'task.toml': TASK_TOML,
      'tests/test.sh': '#!/bin/bash\n',
    });
    expect(() => addContainerFiles(empty, 'python:3.11-slim')).toThrow(/empty/);
  });
});
