import { AgentFaultError, SandboxError } from '../sandbox-types.ts';
import { groundScript } from '../shell-script.ts';

/**
 * Work the docker session holds back until its next exec (docker-session.ts): the engine's sweep
 * owed since the supervisor was stopped, and directories to make anew for the verifier's files,
 * run as the first part of that exec, in that order, so that one process in the container does
 * what took three. Nothing after the sweep runs unless the sweep confirmed that nothing else
 * runs; a refusal exits with a status of its own (HELD_EXIT) before the exec's own work starts.
 */
export interface HeldWork {
  /** The engine's sweep is owed, and the moment it is owed for (the messages say it). */
  ground: When | null;
  /** Directories to make anew, in order; at most one with a tar (read from stdin) to unpack into it. */
  places: { to: string; tar: Buffer | null }[];
}

export type When = 'before the verifier' | 'after the verifier';

/** The held work as the first part of an exec: bash, the stdin it reads, the moment. */
export interface HeldPart {
  script: string;
  stdin: Buffer | undefined;
  when: When;
}

/**
 * Exit statuses of the held part: the sweep adds its status to `ground` (3: processes outlived
 * it, 4: the supervisor was woken or something else runs); `place`: the agent's files are in the
 * way; `unpack`: tar failed inside.
 */
export const HELD_EXIT = { ground: 80, place: 93, unpack: 94 } as const;

/**
 * A bash function, place DIR: makes the container directory DIR anew for a copy; a link or a
 * file anywhere on its path is removed (never followed) first. Status 3 when that cannot be done
 * (only the agent's processes could have put something there that root cannot remove).
 */
export const PLACE_FUNCTION = `place() {
  local to=$1 d= part IFS=/
  set -f
  for part in \${to#/}; do d="$d/$part"; if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then rm -f -- "$d" || return 3; fi; done
  set +f
  rm -rf -- "$to" && mkdir -p -- "$to" || return 3
}
`;

/** The held work as an exec's first part, or null when nothing is held. */
export function heldPart(h: HeldWork | null): HeldPart | null {
  if (h === null || (h.ground === null && h.places.length === 0)) return null;
  const tar = h.places.find((p) => p.tar !== null)?.tar ?? undefined;
  const lines = [
    h.ground ? `${groundScript()}ground || exit $((${HELD_EXIT.ground} + $?))` : '',
    h.places.length > 0 ? PLACE_FUNCTION : '',
    ...h.places.map(
      (p) =>
        `place ${quote(p.to)} || exit ${HELD_EXIT.place}` +
        (p.tar ? `\ntar -x --no-same-owner --no-same-permissions -C ${quote(p.to)} || exit ${HELD_EXIT.unpack}` : ''),
    ),
  ];
  return { script: lines.filter(Boolean).join('\n') + '\n', stdin: tar, when: h.ground ?? 'before the verifier' };
}

/** The sweep found the supervisor woken (a process inside can wake it): stop it and try again. */
export class SupervisorWokenError extends Error {}

/** Throws what an exit status of the held part means; returns for any other status. */
export function heldFailure(code: number | null, stderr: string, when: When): void {
  const detail = stderr.trim().slice(0, 300);
  if (code === HELD_EXIT.ground + 3) throw new AgentFaultError(`processes in the sandbox outlived every kill ${when}`);
  if (code === HELD_EXIT.ground + 4) throw new SupervisorWokenError(`the supervisor was woken ${when}`);
  if (code === HELD_EXIT.place)
    throw new AgentFaultError(`putting the verifier's files in place: the agent's files are in the way: ${detail}`);
  if (code === HELD_EXIT.unpack)
    throw new SandboxError(`unpacking the verifier's files in the container failed: ${detail}`);
}

/** A path as one bash word. */
function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
