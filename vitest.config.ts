import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two files at a time even on two cores (vitest's default there is one): most of the slow files
    // wait on other processes (dockerd, redis-server, spawned `crl` processes, Chromium) rather
    // than compute, and every file is written to share the machine: its own TMPDIR, free loopback
    // ports, containers counted by owner. `npx vitest run --maxWorkers=1` runs them one by one.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Labels the suite's containers and images and removes them (and those of killed suites).
    // ... and removes the per-file temporary roots that fully skipped files leave.
    globalSetup: ['src/sandbox/testing/docker-run-global.ts', 'src/util/testing/temp-root-global.ts'],
    // Gives each test file its own TMPDIR and removes it when the file ends.
    setupFiles: ['src/util/testing/temp-root.ts'],
  },
});
