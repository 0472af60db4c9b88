import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import type { SandboxBackend, SandboxSession, SandboxSpec } from './backend.ts';
import { Sandbox } from './supervised-shell.ts';
import { dockerUnavailableReason, OWNER_LABEL, SANDBOX_LABEL } from './docker-cli.ts';
import { runLabels } from './docker-run-scope.ts';
import { SandboxLimitsSchema, type SandboxLimits } from './limits.ts';
import { AttachedContainer } from './docker/attached-container.ts';
import { preludeScript, seedFrames } from './docker/container-prelude.ts';
import { dockerSession } from './docker/docker-session.ts';
import { engine, engineEndpoint, engineOk } from './docker/engine-api.ts';
import { reserveContainer, takeContainer, type Spare } from './docker/spare-containers.ts';
import { withStorageCap } from './storage-cap.ts';
import { SandboxError, SandboxUnavailableError } from './sandbox-types.ts';
import { supervisorScript } from './shell-script.ts';
import { ownerAlive, ownerTag } from './stale-dirs.ts';

/**
 * The Docker backend (docs/sandbox.md, docs/decisions/0032-docker-backend.md): one container per
 * sandbox, from the image the spec names, driven through the engine's API (docker/engine-api.ts).
 * Its first process is the same supervisor bwrap runs (shell-script.ts, muxed over the
 * container's attached stdin and stderr), so commands, timeouts, the verifier's fresh shell and
 * the process sweep behave as they do there. Memory, processes and CPUs are the daemon's cgroup
 * limits. Nothing of the host is mounted: files go in as tar streams to an exec and come out
 * through one. The container ends when its stdin closes and is then removed, so a killed `crl`
 * leaves nothing running; stopped leftovers of dead owners are removed at the next start (labels
 * name the owner process). With `spares`, prepare(spec) starts a container ahead for a start
 * that follows (docker/spare-containers.ts; at most `spares` wait at once), each used for one
 * episode only.
 */
export function dockerBackend(options: { spares?: number } = {}): SandboxBackend {
  const spares = options.spares ?? 0;
  return {
    name: 'docker',
    unavailableReason,
    prepare(spec: SandboxSpec): void {
      if (spares === 0 || !spec.image || unavailableReason() !== null) return;
      const config = containerConfig(spec, SandboxLimitsSchema.parse(spec.limits ?? {}));
      void sweepOnce().then(() =>
        reserveContainer({ key: JSON.stringify(config), max: spares, newName, make: (n) => startContainer(n, config) }),
      );
    },
    async start(spec: SandboxSpec): Promise<SandboxSession> {
      const unavailable = unavailableReason();
      if (unavailable) throw new SandboxUnavailableError(unavailable);
      if (!spec.image)
        throw new SandboxError('the docker sandbox needs an image (a task without a Dockerfile runs on bwrap)');
      await sweepOnce();
      const limits = SandboxLimitsSchema.parse(spec.limits ?? {});
      const config = containerConfig(spec, limits);
      const make = (name: string): Promise<Spare> => startContainer(name, config);
      // The seeds are packed while the container starts (or a spare is taken).
      const [spare, seeds] = await Promise.all([
        takeContainer({ key: JSON.stringify(config), newName, make }),
        seedFrames(spec.seed ?? []).catch((e: unknown) => e as Error),
      ]);
      const { name, container } = spare;
      let sandbox: Sandbox;
      try {
        if (seeds instanceof Error) throw seeds;
        container.stdin.write(seeds);
        // The first start of an image also unpacks its layers: more time than bwrap needs.
        sandbox = await Sandbox.connect({
          limits,
          nonce: spare.nonce,
          started: container,
          startTimeoutMs: 120_000,
          // A daemon on a local socket runs containers on this kernel: they share its clock.
          sharedClock: engineEndpoint().socketPath !== undefined,
        });
      } catch (e) {
        container.kill();
        await engine({ method: 'DELETE', path: `/containers/${name}`, query: { force: 1 } }).catch(() => undefined);
        throw e;
      }
      const session = dockerSession({ name, sandbox, workdir: spec.workdir, outputBytes: limits.outputBytes });
      // overlay2 caps a container's writable layer only on xfs with project quotas: measured instead.
      if (limits.storageMb === undefined) return session;
      return withStorageCap({
        session,
        capMb: limits.storageMb,
        measure: () => writableLayerBytes(name),
        freeze: () => engineOk({ method: 'POST', path: `/containers/${name}/pause`, timeoutMs: 60_000 }),
      });
    },
  };
}

/** Why no sandbox can start: a DOCKER_HOST this client cannot reach, or no daemon answering. */
function unavailableReason(): string | null {
  try {
    engineEndpoint();
  } catch (e) {
    return (e as Error).message;
  }
  return dockerUnavailableReason();
}

const OWNER = `${hostname()}/${ownerTag()}`;

const newName = (): string => `crl-sandbox-${process.pid}-${randomBytes(5).toString('hex')}`;

/**
 * The engine's create body for a sandbox of this spec, but for the nonce (the same for every
 * episode of a task: the spares' key). Its command is the prelude (container-prelude.ts), then
 * the supervisor.
 */
function containerConfig(spec: SandboxSpec, limits: SandboxLimits): Record<string, unknown> {
  const env = { LANG: 'C.UTF-8', TERM: 'dumb', ...spec.env };
  const made = [spec.workdir, ...spec.dirs.map((d) => d.path), ...(spec.emptyDirs ?? [])];
  const supervisor = supervisorScript({ limits, workdir: spec.workdir, muxed: true, engineLimits: true });
  const network = spec.network ?? 'none';
  return {
    Image: spec.image,
    Hostname: 'sandbox',
    WorkingDir: spec.workdir,
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    Labels: { [SANDBOX_LABEL]: '1', [OWNER_LABEL]: OWNER, ...runLabels() },
    Entrypoint: ['/bin/bash'],
    Cmd: ['--noprofile', '--norc', '-c', preludeScript(made) + supervisor, 'crl-sandbox'],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: true,
    StdinOnce: true,
    Tty: false,
    // Without a network the daemon's network setup is skipped (it runs a process of its own per
    // container); the container still gets its own network namespace, with only a loopback, up.
    ...(network === 'none' ? { NetworkDisabled: true } : {}),
    HostConfig: {
      AutoRemove: true,
      NetworkMode: network,
      Memory: limits.memoryMb * 1024 * 1024,
      MemorySwap: limits.memoryMb * 1024 * 1024,
      PidsLimit: limits.processes,
      ...(spec.cpus ? { NanoCpus: Math.round(spec.cpus * 1e9) } : {}),
      SecurityOpt: ['no-new-privileges'],
      // What the supervisor prints goes to the host over the attached stream only: no log file to write.
      LogConfig: { Type: 'none', Config: {} },
    },
  };
}

/** Starts a container of `config` with a fresh nonce; its prelude then waits for the seeds. */
async function startContainer(name: string, config: Record<string, unknown>): Promise<Spare> {
  const nonce = randomBytes(8).toString('hex');
  const cmd = config.Cmd as string[];
  const container = await AttachedContainer.start({ name, config: { ...config, Cmd: [...cmd, nonce] } });
  return { name, container, nonce };
}

/** The size of the container's writable layer (what it wrote), or null when the daemon does not say. */
async function writableLayerBytes(name: string): Promise<number | null> {
  const r = await engine({ method: 'GET', path: `/containers/${name}/json`, query: { size: 1 }, timeoutMs: 60_000 });
  if (r.status !== 200) return null;
  const s = z.object({ SizeRw: z.number().optional() }).safeParse(JSON.parse(r.body.toString('utf8')));
  return s.success && s.data.SizeRw !== undefined ? s.data.SizeRw : null;
}

let swept: Promise<string[]> | null = null;
/** The sweep below, once per process (before its first sandbox). */
function sweepOnce(): Promise<string[]> {
  swept ??= sweepStaleContainers();
  return swept;
}

const ListedSchema = z.array(z.object({ Id: z.string(), Labels: z.record(z.string(), z.string()).nullable() }));

/** Removes containers of this host's dead owner processes (a killed `crl`); returns their ids. */
export async function sweepStaleContainers(): Promise<string[]> {
  const r = await engine({
    method: 'GET',
    path: '/containers/json',
    query: { all: 1, filters: JSON.stringify({ label: [SANDBOX_LABEL] }) },
    timeoutMs: 60_000,
  }).catch(() => null);
  if (r === null || r.status !== 200) return [];
  const listed = ListedSchema.safeParse(JSON.parse(r.body.toString('utf8')));
  if (!listed.success) return [];
  const stale = listed.data
    .filter(({ Labels }) => {
      const [host, tag] = (Labels?.[OWNER_LABEL] ?? '').split('/');
      return host === hostname() && tag !== undefined && !ownerAlive(tag);
    })
    .map(({ Id }) => Id.slice(0, 12));
  await Promise.all(
    stale.map((id) =>
      engine({ method: 'DELETE', path: `/containers/${id}`, query: { force: 1 }, timeoutMs: 120_000 }).catch(
        () => undefined,
      ),
    ),
  );
  return stale;
}
