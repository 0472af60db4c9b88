/**
 * tests/runner.py of a repo-repair task folder: the only process in which the repository's code
 * runs while it is graded. grade.py reads this file and starts it with `python3 -I -B -X
 * pycache_prefix=<fresh empty directory> -c <this source> <fd>` in /app, with a minimal
 * environment (as uid 65534 where the grader is root). Its stdin holds the calls as JSON
 * (`[[module, function, args], ...]`), read whole before any module of /app is imported; it
 * answers one line per call on file descriptor <fd>, a pipe of the grader's: `[index, "ok",
 * value]` when json.dumps could write what the call returned (so an object whose == always says
 * yes is no answer), `[index, "error", why]` otherwise. Its stdout and stderr go nowhere: what the
 * package prints is never read.
 *
 * Nothing here is trusted: the package runs in this process and can change anything in it. What
 * it does at import or at exit (atexit hooks, children, os._exit, forged lines) can only change
 * what the grader receives on the pipe, which the grader compares with the tests' literals.
 */
export const RUNNER_PY = `"""Calls functions of the repository in /app with literal arguments; answers plain JSON on a pipe."""
import importlib
import json
import os
import sys

answers = int(sys.argv[1])
calls = json.loads(sys.stdin.buffer.read())
sys.stdin.close()
# -I leaves the working directory off sys.path: the repository is named explicitly.
sys.path.insert(0, os.getcwd())


def send(line):
    data = (line + "\\n").encode("utf-8")
    while data:
        data = data[os.write(answers, data):]


for index, (module, function, args) in enumerate(calls):
    try:
        value = getattr(importlib.import_module(module), function)(*args)
    except BaseException as e:  # SystemExit and KeyboardInterrupt are failed calls too
        send(json.dumps([index, "error", "raised " + str(type(e).__name__)[:100]]))
        continue
    try:
        send(json.dumps([index, "ok", value], allow_nan=False))
    except BaseException as e:
        send(json.dumps([index, "error", "returned no plain JSON value (" + str(type(e).__name__)[:100] + ")"]))
`;
