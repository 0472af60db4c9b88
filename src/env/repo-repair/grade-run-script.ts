/**
 * tests/grade_run.py of a repo-repair task folder: the grader's side of the runner (runner-script.ts).
 * It makes the grader a child subreaper, so that whatever the runner starts (a double fork, a
 * setsid daemon) stays its descendant, and non-dumpable, so that a process of the same uid can
 * neither ptrace it nor read its /proc files. Where the grader is root with CAP_SETUID and
 * CAP_SETGID (a Docker container's verifier), the runner runs as uid and gid 65534 with no
 * groups, and /tests and /logs/verifier are made mode 700 first: it can then neither read the
 * grader's files nor write the verdict nor signal the grader. Under bubblewrap the sandbox maps a
 * single uid and drops every capability, so the runner shares the grader's uid: there the signed
 * verdict (grade.py) protects the reward.
 *
 * When the runner exits or its time is up, every descendant is stopped (SIGSTOP, pass after pass,
 * until a pass finds no process it had not stopped, so a fork bomb cannot outrun it), then killed,
 * and reaped until none is left; run_calls raises when that cannot be confirmed, and the grader
 * then writes nothing.
 */
export const GRADE_RUN_PY = `"""Runs the calls in a separate, contained process (runner.py) and sweeps its descendants."""
import ctypes
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
CAP_SETGID, CAP_SETUID = 6, 7
NOBODY = 65534
MAX_REPLY = 16 * 1024 * 1024


class SweepFailed(Exception):
    """Some descendant of the grader outlived every pass: no verdict may be written."""


def contain_self():
    libc = ctypes.CDLL(None, use_errno=True)
    for option, value in ((PR_SET_CHILD_SUBREAPER, 1), (PR_SET_DUMPABLE, 0)):
        if libc.prctl(option, value, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(%d, %d) failed" % (option, value))


def can_drop_to_nobody():
    """Root with CAP_SETUID and CAP_SETGID: the runner can run as another uid."""
    if os.getuid() != 0:
        return False
    with open("/proc/self/status") as f:
        caps = next(int(line.split()[1], 16) for line in f if line.startswith("CapEff:"))
    return bool(caps >> CAP_SETUID & 1) and bool(caps >> CAP_SETGID & 1)


def descendants():
    """Pid -> state letter of every process below this one (orphans come back here: subreaper)."""
    parent, state = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        parent[int(name)], state[int(name)] = int(fields[1]), fields[0].decode()
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, [os.getpid()]
    while todo:
        for pid in children.get(todo.pop(), []):
            found[pid] = state[pid]
            todo.append(pid)
    return found


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep(seconds=20.0):
    """Stops, kills and reaps every descendant; raises SweepFailed if one is still there."""
    stopped = set()
    for _ in range(200):
        found = set(descendants())
        signal_all(found, signal.SIGSTOP)
        if found <= stopped:
            break
        stopped |= found
    deadline = time.monotonic() + seconds
    while True:
        signal_all(stopped, signal.SIGKILL)
        reap()
        left = descendants()
        if not left:
            return
        if time.monotonic() > deadline:
            raise SweepFailed("%d processes outlived the sweep" % len(left))
        stopped = set(left)
        signal_all(stopped, signal.SIGSTOP)
        time.sleep(0.01)


def run_calls(source, calls_json, app, seconds, as_nobody):
    """Starts the runner on the calls, gathers its reply until it exits or the time is up, then
    sweeps: (reply bytes, timed_out)."""
    read_end, write_end = os.pipe()
    drop = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if as_nobody else {}
    with tempfile.TemporaryDirectory(prefix="grade-pycache-", ignore_cleanup_errors=True) as bytecode:
        command = [sys.executable, "-I", "-B", "-X", "pycache_prefix=" + bytecode, "-c", source, str(write_end)]
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8"}
        try:
            try:
                runner = subprocess.Popen(command, cwd=app, env=env, stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          pass_fds=(write_end,), **drop)
            finally:
                os.close(write_end)
            threading.Thread(target=feed, args=(runner.stdin, calls_json.encode()), daemon=True).start()
            reply, timed_out = gather(read_end, runner, seconds)
        finally:
            sweep()
        reply += drain(read_end)
        os.close(read_end)
    return reply[:MAX_REPLY], timed_out


def feed(pipe, data):
    try:
        pipe.write(data)
        pipe.close()
    except OSError:
        pass


def gather(fd, runner, seconds):
    """The runner's reply until it exits (or the time is up: then timed_out), at most MAX_REPLY bytes."""
    deadline = time.monotonic() + seconds
    chunks, size, open_ = [], 0, True
    while size <= MAX_REPLY and runner.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        if not open_:
            time.sleep(min(left, 0.05))
            continue
        ready, _, _ = select.select([fd], [], [], min(left, 0.05))
        chunk = os.read(fd, 65536) if ready else None
        if chunk == b"":
            open_ = False  # every writer closed it; the runner still runs
        elif chunk:
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks), False


def drain(fd):
    """What is left in the pipe once every writer is gone (non-blocking: no writer may be left)."""
    os.set_blocking(fd, False)
    chunks = []
    try:
        while sum(len(c) for c in chunks) <= MAX_REPLY:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except BlockingIOError:
        pass
    return b"".join(chunks)
`;
