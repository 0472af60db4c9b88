import type { SandboxLimits } from './limits.ts';

/**
 * The text the sandbox runs: its first process (the supervisor, a bash script) and the lines the
 * host sends it. Everything the host sends is quoted with bashQuote, so no command text is ever
 * parsed by anything but the agent's own shell.
 *
 * File descriptors inside the sandbox (node's extra stdio pipes pass through bwrap):
 *   0  control lines from the host to the supervisor
 *   1  the agent shell's output (its commands' stdout and stderr, in order) and markers
 *   2  the supervisor's own diagnostics
 *   3  command lines from the host to the agent shell
 *   4  replies from the supervisor to the host
 *
 * A transport with only stdin/stdout/stderr (`docker run -i`) runs the supervisor `muxed`: every
 * host line arrives on fd 0 with a one-letter tag (C: control, A: a line for the agent shell,
 * which the supervisor forwards through a FIFO that becomes the shell's fd 3), and replies go to
 * fd 2.
 */

/** `$'...'` quoting that survives `read -r` as one word: only [A-Za-z0-9_./,:=+-] stay literal. */
export function bashQuote(text: string): string {
  let out = "$'";
  for (const byte of Buffer.from(text.replace(/\0/g, ''), 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_./,:=+-]/.test(c) ? c : `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return out + "'";
}

export const doneMarker = (nonce: string): string => `__CRL_DONE_${nonce}_`;
export const exitMarker = (nonce: string): string => `__CRL_EXIT_${nonce}_`;

/**
 * The line the agent shell runs for one command. The command is eval'd in the shell itself, so
 * `cd` and variables persist, with stdin from /dev/null (it never reads the command stream); a
 * syntax error is eval's, not the shell's, so the marker with the exit code always follows.
 * Stopping a command the way Ctrl-C does: on a timeout the supervisor sends the shell SIGUSR1 and
 * kills what the command started; the USR1 trap sets __crl_a, and the DEBUG trap (extdebug: a
 * failing DEBUG trap skips the command; inherited by functions and subshells) then skips every
 * remaining command of the line except our own, so `sleep 1000; rm -rf x` never reaches the rm
 * and the shell keeps its working directory and variables.
 * (No `{ ...; }` around eval: after a syntax error inside eval, bash 5.2 fails to parse the next
 * brace group, which would end the shell.)
 */
export function agentCommandLine(command: string, nonce: string): string {
  return (
    `__crl_done() { trap - DEBUG; printf '\\n${doneMarker(nonce)}%d__\\n' "$1"; }; ` +
    `__crl_a=; trap '__crl_a=1' USR1; shopt -s extdebug; ` +
    `trap '[[ -z $__crl_a || $BASH_COMMAND == __crl_* || \${FUNCNAME[0]} == __crl_* ]]' DEBUG; ` +
    `eval ${bashQuote(command)} </dev/null; __crl_done "$?"\n`
  );
}

/**
 * The supervisor: sets the hard limits, starts the agent shell (restarted with a marker whenever
 * it exits, so one `exit` or a killed shell does not end the episode), then serves control lines.
 * Every line carries the host's request id <id> (fresh hex per request) and every reply repeats
 * it, so a reply can be matched to the request in flight; a line that is not one of these is
 * answered BAD. Each reply starts on a line of its own (a newline first), so bytes the agent wrote
 * to the same stream without one cannot spoil it (docs/sandbox.md, "The control channel"):
 *   K <id> <cs>   SIGUSR1 to the agent shell (see agentCommandLine), then kill every process
 *                 started in the last <cs> centiseconds except the helpers and the agent shell
 *                 (a timed-out command and everything it started) -> SWEPT <id> <n>
 *   R <id>        kill the agent shell; the loop starts a fresh one -> RESTARTED <id>
 *   P <id>        the agent shell's state letter, CPU time in clock ticks and how many of its
 *                 children are not zombies -> SHELL <id> <state> <ticks> <children> (state - when
 *                 no shell runs)
 *   KA <id>       kill everything but the supervisor, for good (before the verifier), and confirm
 *                 that nothing is left running -> SWEPT <id> <n>, or ALIVE <id> <n> when <n>
 *                 processes outlived every pass
 *   V <id> <q>    run the quoted command in a fresh bash in the workspace, then marker <id> on fd 1
 *   VS <id> <q>   as V (a verifier), and the moment the command exits every other process but the
 *                 supervisor is stopped and killed, before the marker: what the command started
 *                 gets no time to act after it (the host's KA then confirms them gone)
 * Processes are stopped before they are killed, pass after pass, so a fork bomb cannot outrun it;
 * the loops use builtins only (no fork), so they work when the process limit is exhausted.
 */
/** Shell functions shared by the supervisor and sweepScript: reading /proc, stopping and killing. */
const SWEEP_FUNCTIONS = `stat_of() { # $1: pid -> SPPID, SSTART (field 22), SSTATE, SCPU (utime + stime, ticks), or return 1
  local line rest
  read -r line < "/proc/$1/stat" 2>/dev/null || return 1
  rest=\${line##*) }
  set -f; set -- $rest; set +f
  SSTATE=$1; SPPID=$2; SSTART=\${20}; SCPU=$(( \${12} + \${13} ))
}
sweep() { # $1: keep the agent shell (1|0), $2: only processes started at or after this tick (0: all), $3: a pid also kept -> SWEPT_N
  local keep=" 1 $$ $3 " d p pass found
  SWEPT_N=0
  if [ "$1" = 1 ]; then
    keep="$keep$LOOP "
    for d in /proc/[0-9]*; do p=\${d#/proc/}; stat_of "$p" && [ "$SPPID" = "$LOOP" ] && keep="$keep$p "; done
  fi
  for pass in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
    found=0
    for d in /proc/[0-9]*; do
      p=\${d#/proc/}
      case "$keep" in *" $p "*) continue ;; esac
      if [ "$2" != 0 ]; then stat_of "$p" || continue; [ "$SSTART" -ge "$2" ] || continue; fi
      kill -STOP "$p" 2>/dev/null && found=1
    done
    [ "$found" = 0 ] && break
  done
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    case "$keep" in *" $p "*) continue ;; esac
    if [ "$2" != 0 ]; then stat_of "$p" || continue; [ "$SSTART" -ge "$2" ] || continue; fi
    kill -KILL "$p" 2>/dev/null && SWEPT_N=$((SWEPT_N + 1))
  done
}
confirm_gone() { # $1: pids kept (" 1 2 ") -> ALIVE: processes other than those still running after every pass
  local d p pass
  for ((pass = 0; pass < 2000; pass++)); do
    ALIVE=0
    for d in /proc/[0-9]*; do
      p=\${d#/proc/}
      case "$1" in *" $p "*) continue ;; esac
      stat_of "$p" || continue
      [ "$SSTATE" = Z ] && continue
      ALIVE=$((ALIVE + 1))
      kill -KILL "$p" 2>/dev/null
    done
    [ "$ALIVE" = 0 ] && return 0
  done
}
`;

export function supervisorScript(options: {
  limits: SandboxLimits;
  workdir: string;
  /** Host lines tagged on fd 0, replies on fd 2 (see the file comment). */
  muxed?: boolean;
  /**
   * rlimits left to the container engine: address space (a cgroup memory limit instead, which
   * counts what is used, not reserved) and processes (RLIMIT_NPROC counts per host uid, and root
   * is exempt from it; a pids cgroup instead).
   */
  engineLimits?: boolean;
}): string {
  const l = options.limits;
  // [flag, soft, hard]: the CPU hard limit is a second above the soft one, so a process gets
  // SIGXCPU (exit 152) before SIGKILL.
  const limits = [
    ['c', 0, 0],
    ['t', l.cpuSeconds, l.cpuSeconds + 1],
    ['v', l.memoryMb * 1024, l.memoryMb * 1024],
    ['u', l.processes, l.processes],
    ['f', l.fileSizeMb * 1024, l.fileSizeMb * 1024], // bash counts 1024-byte blocks
    ['n', l.openFiles, l.openFiles],
  ].filter(([f]) => !(options.engineLimits && (f === 'v' || f === 'u')));
  const muxSetup = options.muxed
    ? `exec 4>&2
F=$(mktemp -u /tmp/.crl-agent-XXXXXXXX) && mkfifo -m 600 "$F" && exec 3<>"$F" && rm -f "$F" || { printf 'ERROR cannot make the command pipe\\n' >&4; exit 95; }
`
    : '';
  const dispatch = options.muxed
    ? `case "$1" in C*) handle "\${1#C}" ;; A*) printf '%s\\n' "\${1#A}" >&3 ;; *) printf '\\nBAD\\n' >&4 ;; esac`
    : 'handle "$1"';
  return `
N=$1
WS=${bashQuote(options.workdir)}
trap '' HUP INT QUIT TERM USR1 USR2 PIPE ALRM
${muxSetup}${limits.map(([f, soft, hard]) => `{ ulimit -S -${f} ${soft} && ulimit -H -${f} ${hard}; } || { printf 'ERROR ulimit -${f} ${soft} failed\\n' >&4; exit 96; }`).join('\n')}
cd "$WS" || { printf 'ERROR cannot enter the workspace\\n' >&4; exit 97; }
agent_loop() {
  trap - HUP INT QUIT TERM USR1 USR2 PIPE ALRM
  while :; do
    bash --noprofile --norc 0<&3 3<&- 2>&1 &
    wait "$!"
    printf '\\n${exitMarker('%s')}%d__\\n' "$N" "$?"
    cd "$WS" 2>/dev/null
  done
}
start_loop() { agent_loop 4>&- 0</dev/null & LOOP=$!; AGENT=on; }
start_loop
${SWEEP_FUNCTIONS}now_ticks() { local up rest; read -r up rest < /proc/uptime; TICKS=$(( 10#\${up%.*}\${up#*.} )); }
# The shell loop killed from inside (kill -9 -1): clear what is left and start over, telling the host.
check_loop() {
  [ "$AGENT" = on ] || return 0
  if stat_of "$LOOP" && [ "$SSTATE" != Z ] && [ "$SPPID" = $$ ]; then return 0; fi
  sweep 0 0
  printf '\\n${exitMarker('%s')}%d__\\n' "$N" 137
  start_loop
}
handle() {
  local op=\${1%% *} id rest a
  rest=\${1#"$op"}; rest=\${rest# }; id=\${rest%% *}; a=\${rest#"$id"}; a=\${a# }
  [[ $id =~ ^[0-9a-f]{16}$ ]] || { printf '\\nBAD\\n' >&4; return; }
  case "$op" in
    K)
      [[ $a =~ ^[0-9]+$ ]] || { printf '\\nBAD %s\\n' "$id" >&4; return; }
      now_ticks
      for d in /proc/[0-9]*; do p=\${d#/proc/}; stat_of "$p" && [ "$SPPID" = "$LOOP" ] && kill -USR1 "$p" 2>/dev/null; done
      sweep 1 $(( TICKS - a - 1 )); printf '\\nSWEPT %s %d\\n' "$id" "$SWEPT_N" >&4 ;;
    KT)
      # As K, from an absolute tick the host read on this kernel's clock when the command began: a
      # supervisor that reads K late (a loaded machine) would otherwise spare what started early.
      [[ $a =~ ^[0-9]+$ ]] && [ "$a" -gt 0 ] || { printf '\\nBAD %s\\n' "$id" >&4; return; }
      for d in /proc/[0-9]*; do p=\${d#/proc/}; stat_of "$p" && [ "$SPPID" = "$LOOP" ] && kill -USR1 "$p" 2>/dev/null; done
      sweep 1 "$a"; printf '\\nSWEPT %s %d\\n' "$id" "$SWEPT_N" >&4 ;;
    KA)
      AGENT=off; sweep 0 0; confirm_gone " 1 $$ "
      if [ "$ALIVE" = 0 ]; then printf '\\nSWEPT %s %d\\n' "$id" "$SWEPT_N" >&4; else printf '\\nALIVE %s %d\\n' "$id" "$ALIVE" >&4; fi ;;
    R)
      for d in /proc/[0-9]*; do p=\${d#/proc/}; stat_of "$p" && [ "$SPPID" = "$LOOP" ] && kill -KILL "$p" 2>/dev/null; done
      printf '\\nRESTARTED %s\\n' "$id" >&4 ;;
    P)
      local sh=- st=- cpu=0 live=0
      for d in /proc/[0-9]*; do p=\${d#/proc/}; stat_of "$p" && [ "$SPPID" = "$LOOP" ] && [ "$SSTATE" != Z ] && { sh=$p; st=$SSTATE; cpu=$SCPU; }; done
      if [ "$sh" != - ]; then
        for d in /proc/[0-9]*; do p=\${d#/proc/}; stat_of "$p" && [ "$SPPID" = "$sh" ] && [ "$SSTATE" != Z ] && live=$((live + 1)); done
      fi
      printf '\\nSHELL %s %s %d %d\\n' "$id" "$st" "$cpu" "$live" >&4 ;;
    V|VS)
      # Only bashQuote's output is evaluated: $'...' of literal characters and \\x escapes.
      [[ $a =~ ^\\$\\'([A-Za-z0-9_./,:=+-]|\\\\x[0-9a-f]{2})*\\'$ ]] || { printf '\\nBAD %s\\n' "$id" >&4; return; }
      eval "c=$a"
      ( trap - HUP INT QUIT TERM USR1 USR2 PIPE ALRM; cd "$WS" || exit 97; bash --noprofile --norc -c "$c" </dev/null 2>&1
        s=$?; [ "$op" = VS ] && sweep 0 0 "$BASHPID"; printf '\\n${doneMarker('%s')}%d__\\n' "$id" "$s" ) 4>&- 3<&- &
      ;;
    *) printf '\\nBAD %s\\n' "$id" >&4 ;;
  esac
}
dispatch() { ${dispatch}; }
printf 'READY %s\\n' "$N" >&4
# Lines from the host, polled each second so a killed shell loop is noticed; read -t keeps a
# partial line, which is completed by the next read.
buf=
while :; do
  if IFS= read -r -t 1 part; then
    dispatch "$buf$part"; buf=
  elif [ $? -gt 128 ]; then
    buf=$buf$part; check_loop
  else
    break
  fi
done
`;
}

/**
 * The sweep as a script of its own, for a backend that can start a process in the sandbox
 * without the supervisor (docker exec; docker-backend.ts): kills every process but pid 1 and
 * itself, confirms none is left running, prints `<killed> <alive>` and exits 3 when some outlived
 * every pass. Its exit status comes from the engine, which nothing inside the sandbox can forge.
 *
 * The caller stopped pid 1 (the supervisor) from outside first. A process inside may have woken
 * it (SIGCONT reaches a namespace's init from inside) and fed it lines before it died, so the
 * script ends by checking that pid 1 is still stopped and that, after that, nothing else runs:
 * only then can nothing inside act again. Otherwise it exits 4 and the caller stops and sweeps
 * again.
 */
/**
 * Bash for the end of a verifier's shell (docker-exec.ts): stops and kills every process but pid 1
 * and this shell the moment its command has exited, so what the command started gets no time to
 * act after it; the caller's sweepScript then confirms them gone.
 */
export function sweepNowScript(): string {
  return `${SWEEP_FUNCTIONS}sweep 0 0\n`;
}

export function sweepScript(): string {
  return `${groundScript()}ground
s=$?
printf '%d %d\\n' "$SWEPT_N" "$ALIVE"
exit $s
`;
}

/**
 * sweepScript's work as a bash function, `ground`, for a script that does more after it in the
 * same process (docker-session.ts: the verifier's files put in place once nothing else runs):
 * status 3 when processes outlived every pass, 4 when pid 1 was woken or something else runs.
 */
export function groundScript(): string {
  return `${SWEEP_FUNCTIONS}ground() {
  local d p
  sweep 0 0
  confirm_gone " 1 $$ "
  [ "$ALIVE" = 0 ] || return 3
  stat_of 1 && [ "$SSTATE" = T ] || return 4
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    case " 1 $$ " in *" $p "*) continue ;; esac
    stat_of "$p" || continue
    [ "$SSTATE" = Z ] || return 4
  done
  return 0
}
`;
}
