import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerNetworkExists } from '../../sandbox/docker-cli.ts';
import { dockerAvailable, TEST_BASE_IMAGE } from '../../sandbox/testing/docker-available.ts';
import { loadHarborTask } from './load-tasks.ts';
import { buildNetwork, taskImage } from './task-image.ts';
import { writeTaskFolder } from './testing/task-folders.ts';

/**
 * A task's image is built on the network the task allows (docs/harbor.md): a Dockerfile whose
 * RUN tries a listener on the host's loopback reaches it only when the task allows internet.
 */
const available = dockerAvailable('task image builds and their network');
const root = mkdtempSync(join(tmpdir(), 'crl-task-image-'));
const made: string[] = [];
afterAll(() => {
  if (made.length > 0) spawnSync('docker', ['rmi', '-f', ...made]);
  rmSync(root, { recursive: true, force: true });
});

/** Builds a task whose Dockerfile probes 127.0.0.1:port; resolves with what the probe saw and the listener's count. */
async function probeBuild(name: string, internet: boolean): Promise<{ probe: string; connections: number }> {
  let connections = 0;
  const server = createServer((sock) => {
    connections++;
    sock.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  try {
    const probe = `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${port}), 5)\n    print("reached")\nexcept OSError:\n    print("blocked")\n`;
    const dir = writeTaskFolder(join(root, name), {
      'instruction.md': 'x\n',
      'task.toml': `[environment]\nallow_internet = ${internet}\n`,
      'environment/Dockerfile': `FROM ${TEST_BASE_IMAGE}\nCOPY probe.py /opt/probe.py\nRUN python3 /opt/probe.py > /opt/probe.txt\n`,
      'environment/probe.py': probe,
      'tests/test.sh': 'true\n',
    });
    const { image } = await taskImage(loadHarborTask(dir));
    made.push(image);
    const out = spawnSync('docker', ['run', '--rm', '--network', 'none', image, 'cat', '/opt/probe.txt'], {
      encoding: 'utf8',
    });
    return { probe: out.stdout.trim(), connections };
  } finally {
    server.close();
  }
}

describe.skipIf(!available)('task image builds obey the task network', () => {
  it('allow_internet = false: built with no network, it reaches nothing on the host loopback', async () => {
    const dir = writeTaskFolder(join(root, 'plain'), {
      'instruction.md': 'x',
      'task.toml': '[environment]\nallow_internet = false\n',
      'tests/test.sh': 'true',
    });
    expect(buildNetwork(loadHarborTask(dir))).toBe('none');
    expect(await probeBuild('offline', false)).toEqual({ probe: 'blocked', connections: 0 });
  }, 300_000);

  it.skipIf(dockerNetworkExists('bridge'))(
    'allow_internet = true on a daemon without a bridge: built on the host network, the probe does reach the listener',
    async () => {
      const r = await probeBuild('online', true);
      expect(r.probe).toBe('reached');
      expect(r.connections).toBe(1);
    },
    300_000,
  );
});
