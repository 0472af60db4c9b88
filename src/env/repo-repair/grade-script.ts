/**
 * tests/grade.py of a repo-repair task folder: the verifier, graded as SWE-bench grades. It puts
 * its own pristine copy of the tests (tests/repo-tests, uploaded with the verifier, never seen by
 * the agent) in place of /app/tests, runs the FAIL_TO_PASS and PASS_TO_PASS node ids listed in
 * tests/config.json once, and writes reward 1 only when every one of them passed (reward.txt), with
 * the share of each list that passed (reward.json, for diagnostics).
 *
 * What the agent changed besides the package cannot change the verdict: a deleted, edited or
 * skipped test is restored; conftest.py files are not loaded (--noconftest); its pytest.ini,
 * setup.cfg or pyproject.toml are not read (-c with the verifier's own); python runs isolated (-I:
 * no user site, no PYTHON* variables, no sitecustomize from /app); plugins do not autoload; and
 * no bytecode from /app is read (-X pycache_prefix, a fresh directory): Python trusts a
 * __pycache__ file whose recorded source mtime (whole seconds) and size match, so the agent's own
 * test run followed within the second by a fix of the same length (`<=` for `>=`) graded the old
 * code, and a .pyc compiled from a fix and stamped with the buggy source's mtime would pass a
 * package whose source was never fixed. A test counts only when it ran and passed: a skipped,
 * missing or erroring one fails.
 */
export const GRADE_PY = `"""Grades the repository in /app by the tests listed in /tests/config.json (SWE-bench style)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

APP = "/app"
OUT = "/logs/verifier"


def restore_tests():
    target = os.path.join(APP, "tests")
    if os.path.islink(target) or os.path.isfile(target):
        os.unlink(target)
    elif os.path.isdir(target):
        shutil.rmtree(target)
    shutil.copytree("/tests/repo-tests", target)


def passed_ids(ids):
    xml = os.path.join(OUT, "junit.xml")
    if os.path.lexists(xml):
        os.unlink(xml)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    with tempfile.TemporaryDirectory() as bytecode:
        command = [sys.executable, "-I", "-X", "pycache_prefix=" + bytecode, "-m", "pytest", "-c",
                   "/tests/pytest.ini", "--rootdir", APP, "--noconftest", "-p", "no:cacheprovider", "-q",
                   "--junitxml", xml, *ids]
        try:
            subprocess.run(command, cwd=APP, env=env, timeout=300)
        except subprocess.TimeoutExpired:
            return set()
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError):
        return set()
    passed = set()
    for case in root.iter("testcase"):
        if any(child.tag in ("failure", "error", "skipped") for child in case):
            continue
        passed.add(case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", ""))
    return passed


def main():
    with open("/tests/config.json") as f:
        config = json.load(f)
    f2p, p2p = config["fail_to_pass"], config["pass_to_pass"]
    os.makedirs(OUT, exist_ok=True)
    restore_tests()
    passed = passed_ids(f2p + p2p)

    def share(ids):
        return sum(1 for i in ids if i in passed) / len(ids) if ids else 1.0

    reward = 1 if all(i in passed for i in f2p + p2p) else 0
    with open(os.path.join(OUT, "reward.json"), "w") as f:
        json.dump({"reward": reward, "fail_to_pass": share(f2p), "pass_to_pass": share(p2p)}, f)
    with open(os.path.join(OUT, "reward.txt"), "w") as f:
        f.write(f"{reward}\\n")


main()
`;
