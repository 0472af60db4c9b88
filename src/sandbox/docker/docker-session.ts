import type { SandboxSession } from '../backend.ts';
import { copyTree, execFresh, stopSupervisor } from '../docker-exec.ts';
import { AgentFaultError, SandboxError } from '../sandbox-types.ts';
import type { Sandbox } from '../supervised-shell.ts';
import { packTree } from './container-prelude.ts';
import { engine } from './engine-api.ts';
import { heldPart, SupervisorWokenError, type HeldPart, type HeldWork } from './held-work.ts';
import { readContainerDir, readContainerFile } from './read-file.ts';

/**
 * One docker sandbox as the backend interface sees it (docs/sandbox.md): the agent's commands go
 * to the supervisor over the container's attached streams; the verifier's side goes through the
 * engine (docker-exec.ts). Work that only prepares a later step waits for that step's exec
 * (held-work.ts): once the agent's turn is over (clearAgent) the engine's sweep and the uploads
 * of copyIn run first in the verifier's own exec; when its command ended, the same exec sweeps
 * again and reads the directories emptied for it (its reward files), which readFile then serves.
 * Nothing of the verifier enters, and nothing is read, before a sweep in the same exec confirmed
 * that nothing else runs in the container but the stopped supervisor; when that cannot be
 * confirmed there (the supervisor was woken), it is stopped again and the next exec sweeps first.
 */

/** Largest upload held back for the verifier's exec; a bigger tree is copied at once. */
const HELD_UPLOAD_BYTES = 32 * 1024 * 1024;

/** Largest file of the verifier's directories read with its exec; a bigger one costs a read of its own. */
const READ_AFTER_BYTES = 64 * 1024;

export function dockerSession(options: {
  name: string;
  sandbox: Sandbox;
  workdir: string;
  outputBytes: number;
}): SandboxSession {
  const { name, sandbox } = options;
  let closed = false;
  let cleared: Promise<void> | null = null;
  let held: HeldWork | null = null;
  /**
   * Files read since the verifier ended, by directory (nothing runs in the container then, so
   * they cannot change): the reads after the first cost nothing. Dropped by whatever runs next.
   */
  let inert: { dirs: Map<string, { maxBytes: number; files: Map<string, Buffer> | null }> } | null = null;
  /** Directories emptied for the verifier (copyIn from null): read in its exec, once it ended. */
  let outputDirs: string[] = [];

  // The agent's turn is over: the supervisor sweeps (its reply checked) and is stopped from
  // outside; the engine's own sweep comes first in the next exec, so neither a forged reply nor
  // bytes the agent left in the supervisor's input can keep anything of the agent alive, or start
  // anything, once the verifier's files go in.
  const clearAgent = (): Promise<void> =>
    (cleared ??= (async () => {
      await sandbox.clearAgent();
      await stopSupervisor(name);
      held = { ground: 'before the verifier', places: [] };
    })());

  /**
   * Runs `f` with the held work as its exec's first part; when that sweep finds the supervisor
   * woken, the supervisor is stopped again and all of it tried again (five times, then the agent's failure).
   */
  const withHeld = async <T>(f: (before: HeldPart | null) => Promise<T>): Promise<T> => {
    const owed = held;
    const before = heldPart(owed);
    if (owed !== null) held = { ground: null, places: [] };
    for (let attempt = 1; ; attempt++) {
      try {
        return await f(before);
      } catch (e) {
        if (!(e instanceof SupervisorWokenError)) {
          held = owed; // not done: still owed by whatever comes next
          throw e;
        }
        if (attempt >= 5)
          throw new AgentFaultError(`a process in the sandbox kept waking its supervisor ${before!.when}`);
        await stopSupervisor(name);
      }
    }
  };

  /** The held work in an exec of its own (before an upload too big to hold, or a second one). */
  const flush = (): Promise<void> =>
    withHeld(async (before) => {
      if (before === null) return;
      const r = await execFresh({ name, command: 'true', workdir: '/', timeoutMs: 300_000, outputBytes: 4096, before });
      if (r.exitCode === null) throw new SandboxError('the work held for the verifier did not finish');
    });

  return {
    run: (command, o) => {
      inert = null;
      return sandbox.run(command, o);
    },
    clearAgent,
    async runFresh(command, o) {
      inert = null;
      if (o.keepAgent) return sandbox.runFresh(command, o);
      await clearAgent();
      const read = outputDirs;
      outputDirs = [];
      const { after, ...r } = await withHeld((before) =>
        execFresh({
          name,
          command,
          workdir: options.workdir,
          outputBytes: options.outputBytes,
          ...o,
          before,
          after: { dirs: read, maxBytes: READ_AFTER_BYTES },
        }),
      );
      // What the verifier started (the code under test included) was killed the moment it ended,
      // and the engine's sweep in the same exec confirmed that nothing runs but the stopped
      // supervisor; only then were the verifier's directories read. Nothing can act in the
      // container any more: what is read next is final.
      inert = { dirs: new Map() };
      if (after?.ground === 0) {
        for (const [dir, files] of after.listing ?? []) inert.dirs.set(dir, { maxBytes: READ_AFTER_BYTES, files });
        return r;
      }
      if (after?.ground === 3)
        throw new AgentFaultError('processes in the sandbox outlived every kill after the verifier');
      // The supervisor was woken (the verifier's code can), or the exec did not say: stopped
      // again, and the engine's sweep comes first in the exec that reads.
      await stopSupervisor(name);
      held = { ground: 'after the verifier', places: [] };
      return r;
    },
    async copyIn({ from, to }) {
      inert = null;
      if (held === null) return copyTree({ name, from, to, skip: [] });
      const tar = from === null ? null : await packTree(from);
      const big = tar !== null && tar.length > HELD_UPLOAD_BYTES;
      if (big || (tar !== null && held.places.some((p) => p.tar !== null))) await flush();
      if (big) return copyTree({ name, from, to, skip: [] });
      held.places.push({ to, tar });
      // A directory made empty for the verifier is where it writes: read right after it (runFresh).
      if (tar === null) outputDirs.push(to);
    },
    async readFile(path, { maxBytes }) {
      if (inert === null) return withHeld((before) => readContainerFile({ name, path, maxBytes, before }));
      const dir = path.slice(0, path.lastIndexOf('/')) || '/';
      let known = inert.dirs.get(dir);
      if (known === undefined || known.maxBytes < maxBytes) {
        const files = await withHeld((before) => readContainerDir({ name, path, maxBytes, before }));
        if (files === 'too much') return readContainerFile({ name, path, maxBytes, before: null });
        known = { maxBytes, files };
        inert?.dirs.set(dir, known);
      }
      const file = known.files?.get(path.slice(path.lastIndexOf('/') + 1));
      return file !== undefined && file.length <= maxBytes ? file : null;
    },
    async close() {
      if (closed) return;
      closed = true;
      const r = await engine({ method: 'DELETE', path: `/containers/${name}`, query: { force: 1 }, timeoutMs: 60_000 });
      await sandbox.close();
      // Created with AutoRemove, the container may already be gone, or going (its own end started
      // the removal): only a container left running is a failure. One whose removal is under way
      // is waited for, so that close() returns with the container gone.
      if (r.status === 409 && /removal of container .* is already in progress/i.test(r.body.toString('utf8')))
        await untilGone(name);
      else if (r.status !== 204 && r.status !== 404)
        throw new SandboxError(
          `removing container ${name} failed: ${r.status} ${r.body.toString('utf8').slice(0, 400)}`,
        );
    },
  };
}

/** Waits (up to 60 s) until the daemon no longer knows the container; a SandboxError after that. */
async function untilGone(name: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await engine({ method: 'GET', path: `/containers/${name}/json`, timeoutMs: 30_000 });
    if (r.status === 404) return;
    if (Date.now() > deadline)
      throw new SandboxError(`container ${name} was still being removed 60 s after it was asked to go`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
