/**
 * The two sandbox backends side by side (docs/sandbox.md): one task folder that both can run (an
 * environment/Dockerfile for docker, an environment/setup.sh doing the same for bwrap), measured
 * for: the image build (docker: first build, then the cached lookup), sandbox start (docker: cold,
 * and of a container started ahead by prepare), one command's round trip in the persistent shell,
 * and whole harbor-oracle episodes (start, solve.sh, the verifier, close) with 4 at a time, each
 * announced as the episode runner announces it. Needs bubblewrap and a Docker daemon with the test base image
 * (scripts/docker-setup.sh).
 * Run: `npm run bench:sandbox-backends [-- --commands 200 --starts 10 --episodes 40]`.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { HarborEnv } from '../src/env/harbor/harbor-env.ts';
import { loadHarborTask } from '../src/env/harbor/load-tasks.ts';
import { writeTaskFolder } from '../src/env/harbor/testing/task-folders.ts';
import { sandboxBackend } from '../src/sandbox/registry.ts';
import { buildImage } from '../src/sandbox/docker-images.ts';
import { readySpares, removeSpares } from '../src/sandbox/docker/spare-containers.ts';
import { waitFor } from '../src/util/testing/wait-for.ts';
import { TEST_BASE_IMAGE } from '../src/sandbox/testing/docker-available.ts';
import { parseBenchArgs } from './bench-args.ts';

const args = parseBenchArgs(
  'bench:sandbox-backends',
  z.object({
    commands: z.coerce.number().int().min(1).default(200),
    starts: z.coerce.number().int().min(1).default(10),
    episodes: z.coerce.number().int().min(4).default(40),
  }),
);

const quantiles = (xs: number[]): string => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return `median ${q(0.5).toFixed(1)} ms, p90 ${q(0.9).toFixed(1)} ms (n=${s.length})`;
};

const root = mkdtempSync(join(tmpdir(), 'crl-bench-backends-'));
const dir = writeTaskFolder(join(root, 'sum'), {
  'instruction.md': 'Add the numbers in /app/nums and write the sum to /app/answer.txt.\n',
  'task.toml': '[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n[environment]\nallow_internet = false\n',
  // The nonce makes the build a real one (the daemon's layer cache cannot answer it).
  'environment/Dockerfile': `FROM ${TEST_BASE_IMAGE}\nWORKDIR /app\nRUN echo ${randomBytes(8).toString('hex')} > /etc/bench-nonce && seq 1 10 > /app/nums\n`,
  'environment/setup.sh': 'seq 1 10 > /app/nums\n',
  'tests/test.sh':
    '#!/bin/bash\n[ "$(cat /app/answer.txt)" = 55 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
  'solution/solve.sh': "#!/bin/bash\nawk '{s+=$1} END {print s}' /app/nums > /app/answer.txt\n",
});
const task = loadHarborTask(dir);

// The image: a first build, then the cached lookup a second episode makes.
const repo = 'crl-bench/sum';
const t0 = performance.now();
const built = await buildImage({ contextDir: join(dir, 'environment'), repo, timeoutMs: 600_000 });
const buildMs = performance.now() - t0;
const t1 = performance.now();
const cached = await buildImage({ contextDir: join(dir, 'environment'), repo, timeoutMs: 600_000 });
console.log(
  `docker image: build ${(buildMs / 1000).toFixed(2)} s (${built.source}), then ${(performance.now() - t1).toFixed(0)} ms (${cached.source})`,
);

const rows: string[] = [];
for (const name of ['bwrap', 'docker'] as const) {
  const backend = sandboxBackend(name);
  const spec = {
    dirs: [{ path: '/app', writable: true }],
    workdir: '/app',
    ...(name === 'docker' ? { image: built.image } : {}),
  };
  const starts: number[] = [];
  for (let i = 0; i < args.starts; i++) {
    const a = performance.now();
    const s = await backend.start(spec);
    starts.push(performance.now() - a);
    await s.close();
  }
  // docker: a start that finds its container started ahead (prepare), as the runner's episodes do.
  const prepared: number[] = [];
  if (backend.prepare) {
    for (let i = 0; i < args.starts; i++) {
      backend.prepare(spec);
      await waitFor(() => readySpares() > 0, { what: 'a container started ahead', timeoutMs: 120_000 });
      const a = performance.now();
      const s = await backend.start(spec);
      prepared.push(performance.now() - a);
      await s.close();
    }
  }
  const s = await backend.start(spec);
  const trips: number[] = [];
  for (let i = 0; i < args.commands; i++) {
    const a = performance.now();
    await s.run('/bin/true');
    trips.push(performance.now() - a);
  }
  await s.close();
  // Whole oracle episodes, 4 at a time, each announced (prepare) when the one 4 before it starts,
  // as the episode runner does.
  let passed = 0;
  const envs = Array.from(
    { length: args.episodes },
    () => new HarborEnv({ task, sandbox: backend, exposeSolution: true }),
  );
  const episode = async (env: HarborEnv) => {
    try {
      await env.reset(0);
      await env.step('bash /solution/solve.sh');
      const end = await env.step('submit');
      passed += end.reward; // after the await: `passed += (await ...)` would read passed before it
    } finally {
      await env.close();
    }
  };
  await episode(new HarborEnv({ task, sandbox: backend, exposeSolution: true })); // warm: the image's first start
  const a = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < envs.length) {
      const i = next++;
      envs[i + 4]?.prepare();
      await episode(envs[i]!);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  const secs = (performance.now() - a) / 1000;
  const eps = args.episodes;
  console.log(`${name}: start ${quantiles(starts)}; command round trip ${quantiles(trips)}`);
  if (prepared.length > 0) console.log(`${name}: start of a container started ahead ${quantiles(prepared)}`);
  console.log(
    `${name}: ${eps} oracle episodes, 4 at a time: ${secs.toFixed(2)} s, ${(eps / secs).toFixed(2)} episodes/s, passed ${passed}`,
  );
  const ahead = prepared.length > 0 ? quantiles(prepared) : '-';
  rows.push(`| ${name} | ${quantiles(starts)} | ${ahead} | ${quantiles(trips)} | ${(eps / secs).toFixed(2)} |`);
}
console.log(
  '\n| backend | start | start, container started ahead | command round trip | oracle episodes/s, 4 at a time |\n|---|---|---|---|---:|',
);
for (const r of rows) console.log(r);
rmSync(root, { recursive: true, force: true });
await removeSpares();
spawnSync('docker', ['rmi', '-f', built.image]);
