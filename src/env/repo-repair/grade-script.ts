import { GRADE_RUN_PY } from './grade-run-script.ts';
import { GRADE_SPEC_PY } from './grade-spec-script.ts';
import { RUNNER_PY } from './runner-script.ts';

/**
 * tests/grade.py of a repo-repair task folder: the verifier, graded as SWE-bench grades (the
 * FAIL_TO_PASS and PASS_TO_PASS node ids listed in tests/config.json must all pass), in a process
 * that never imports the repository. It reads what each listed test asks from its own pristine
 * copy of the tests (tests/repo-tests, uploaded with the verifier, never seen by the agent) with
 * `ast` (grade-spec-script.ts); the repository's code runs only in a separate runner process
 * (runner-script.ts, grade-run-script.ts) that answers plain JSON values over a pipe, which the
 * grader compares with the tests' literals. What the package does at import or at exit (rewrite a
 * report, leave a daemon behind, print forged lines, exit early, return an object that equals
 * everything) can only change what it returns: every process the runner started is stopped and
 * killed, and confirmed gone, before anything is written.
 *
 * The verdict is reward.txt (1 when every listed test passed, else 0) and reward.json (the share
 * of each list that passed, for diagnostics). Signed verdict: when /tests/.verdict-key exists (one
 * line of 64 lowercase hex characters, a fresh key per episode written by the framework for a
 * task.toml with `[metadata] verdict = "signed"`), the grader reads and unlinks it before any code
 * of /app runs, and writes reward.sig after reward.txt: the lowercase hex HMAC-SHA256 of
 * reward.txt's exact bytes under that key, then a newline. A key it cannot remove is a key the
 * runner could read: it then writes nothing. Without the file (real Harbor) reward.txt goes
 * unsigned. Each reward file is written anew: whatever is at its path (a link, a directory) is
 * removed and the file is created with O_CREAT | O_EXCL | O_NOFOLLOW.
 *
 * Nothing of the agent's changes besides the package reaches the grader: tests, conftest.py,
 * pytest.ini, __pycache__ (the runner reads no bytecode: -B and a fresh pycache_prefix; Python
 * trusts a .pyc whose recorded source mtime and size match, so a planted one would be graded in
 * place of the source) and PYTHON* variables (-I) are never read.
 */
export const GRADE_PY = `"""Grades the repository in /app by the tests listed in /tests/config.json (SWE-bench style)."""
import hashlib
import hmac
import json
import os
import re
import shutil
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)  # -I leaves the script's directory off sys.path

from grade_run import can_drop_to_nobody, contain_self, run_calls  # noqa: E402
from grade_spec import Unsupported, checks_for, decode_results, same  # noqa: E402

APP = "/app"
TESTS = "/tests"
OUT = "/logs/verifier"
RUNNER_SECONDS = 60


def take_key(path):
    """The episode's verdict key, read and unlinked before any code of /app runs; None without one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    try:
        data = os.read(fd, 256)
    finally:
        os.close(fd)
    os.unlink(path)  # raises when it cannot go: the runner could read it, so no verdict
    text = data.decode("ascii", "replace")
    if not re.fullmatch(r"[0-9a-f]{64}\\n?", text):
        raise ValueError(path + " is not one line of 64 lowercase hex characters")
    return bytes.fromhex(text.strip())


def short(value):
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def passed_ids(ids, tests_dir, runner_source, as_nobody):
    """The listed ids whose every check the runner answered with the expected value (printed, each)."""
    calls, of_test, why = [], {}, {}
    for node_id in ids:
        try:
            checks = checks_for(node_id, tests_dir)
        except Unsupported as e:
            why[node_id] = str(e)
            continue
        of_test[node_id] = range(len(calls), len(calls) + len(checks))
        calls.extend(checks)
    results, timed_out = [], False
    if calls:
        job = json.dumps([[c["module"], c["function"], c["args"]] for c in calls])
        reply, timed_out = run_calls(runner_source, job, APP, RUNNER_SECONDS, as_nobody)
        results = decode_results(reply, len(calls))
    for node_id, indices in of_test.items():
        for i in indices:
            c, r = calls[i], results[i]
            call = "%s.%s(%s)" % (c["module"], c["function"], ", ".join(short(a) for a in c["args"]))
            if r is None:
                why[node_id] = call + ": no answer" + (" (the runner timed out)" if timed_out else "")
            elif r[0] == "error":
                why[node_id] = call + " " + r[1]
            elif not same(c["expected"], r[1]):
                why[node_id] = "%s returned %s, expected %s" % (call, short(r[1]), short(c["expected"]))
            if node_id in why:
                break
    for node_id in ids:
        print(("FAILED %s: %s" % (node_id, why[node_id])) if node_id in why else "PASSED " + node_id)
    return {i for i in ids if i not in why}


def ensure_dir(path):
    """path as a real directory the grader can write (a link or file there is removed first)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        st = None
    if st is None:
        os.mkdir(path, 0o755)
    elif not os.access(path, os.W_OK | os.X_OK):
        os.chmod(path, stat.S_IMODE(st.st_mode) | 0o700)


def remove_at(dir_fd, name):
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def write_at(dir_fd, name, data):
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def write_verdict(out, reward, shares, key):
    """reward.json, reward.txt, then reward.sig when there is a key; stale ones removed first."""
    ensure_dir(out)
    dir_fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for name in ("reward.txt", "reward.sig", "reward.json"):
            remove_at(dir_fd, name)
        write_at(dir_fd, "reward.json", json.dumps(dict(reward=reward, **shares)).encode())
        text = ("%d\\n" % reward).encode()
        write_at(dir_fd, "reward.txt", text)
        if key is not None:
            write_at(dir_fd, "reward.sig", (hmac.new(key, text, hashlib.sha256).hexdigest() + "\\n").encode())
    finally:
        os.close(dir_fd)


def clear_verdict(out):
    """No verdict: whatever the runner may have left in its place goes too (best effort)."""
    for name in ("reward.txt", "reward.sig", "reward.json"):
        try:
            remove_at(None, os.path.join(out, name))
        except OSError:
            pass


def main():
    key = take_key(os.path.join(TESTS, ".verdict-key"))
    contain_self()
    as_nobody = can_drop_to_nobody()
    with open(os.path.join(TESTS, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(HERE, "runner.py")) as f:
        runner_source = f.read()
    f2p, p2p = config["fail_to_pass"], config["pass_to_pass"]
    ensure_dir(OUT)
    modes = {path: stat.S_IMODE(os.stat(path).st_mode) for path in (TESTS, OUT)} if as_nobody else {}
    try:
        for path in modes:
            os.chmod(path, 0o700)  # the runner (uid 65534) can neither read the tests nor write the verdict
        if not as_nobody:
            print("note: the runner shares the grader's uid" + ("; the verdict is signed" if key else ""))
        passed = passed_ids(f2p + p2p, os.path.join(TESTS, "repo-tests"), runner_source, as_nobody)

        def share(ids):
            return sum(1 for i in ids if i in passed) / len(ids) if ids else 1.0

        reward = 1 if all(i in passed for i in f2p + p2p) else 0
        write_verdict(OUT, reward, {"fail_to_pass": share(f2p), "pass_to_pass": share(p2p)}, key)
    finally:
        for path, mode in modes.items():
            os.chmod(path, mode)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print("grade.py wrote no verdict: %s: %s" % (type(e).__name__, e))
        clear_verdict(OUT)
        sys.exit(2)
`;

/** The verifier's Python files, by their name in tests/ (grade.py imports the two modules, reads runner.py). */
export const GRADER_FILES: Readonly<Record<string, string>> = {
  'grade.py': GRADE_PY,
  'grade_spec.py': GRADE_SPEC_PY,
  'grade_run.py': GRADE_RUN_PY,
  'runner.py': RUNNER_PY,
};
