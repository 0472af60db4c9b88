/**
 * tests/grade_spec.py of a repo-repair task folder: what the listed tests ask, read from the
 * grader's pristine copy with Python's `ast` (never imported, so nothing of the tests or of /app
 * runs in the grader), and the comparison of what the runner returned with it.
 *
 * A listed test is graded when it is a module-level `def test_x():` whose every statement is
 * `assert FN(LITERAL, ...) == LITERAL`, FN imported at module level by `from MODULE import FN`
 * (the generated tests have exactly this shape); anything else in it makes it a failed test,
 * with the reason printed. Values are plain JSON values (None, bool, int, float, str, list, dict
 * with string keys): the runner can return nothing else, and they compare as pytest's `==` would,
 * except that a bool never equals a number (True == 1 in Python).
 */
export const GRADE_SPEC_PY = `"""What the listed tests ask (read with ast, never imported) and how returned values compare."""
import ast
import json
import math
import os
import re

MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*")
NODE_ID = re.compile(r"tests/([A-Za-z0-9_]+\\.py)::([A-Za-z_][A-Za-z0-9_]*)")


class Unsupported(Exception):
    """A listed test the grader cannot state as calls: it counts as failed."""


def plain(value):
    """True for a plain JSON value (what json.loads gives; no NaN or infinity)."""
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and plain(v) for k, v in value.items())
    return False


def same(expected, got):
    """pytest's expected == got over plain values, except that a bool equals only a bool."""
    if type(expected) is bool or type(got) is bool:
        return type(expected) is bool and type(got) is bool and expected == got
    if type(expected) in (int, float):
        return type(got) in (int, float) and expected == got
    if expected is None or type(expected) is str:
        return type(got) is type(expected) and expected == got
    if type(expected) is list:
        return type(got) is list and len(got) == len(expected) and all(same(e, g) for e, g in zip(expected, got))
    if type(expected) is dict:
        return type(got) is dict and got.keys() == expected.keys() and all(same(v, got[k]) for k, v in expected.items())
    return False


def literal(node):
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise Unsupported("an argument or expected value is not a literal")
    if not plain(value):
        raise Unsupported("a literal that is not a plain JSON value: " + repr(value)[:80])
    return value


def imported_names(tree):
    """Local name -> (module, name) for the module's absolute \`from MODULE import NAME\` lines."""
    names = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and MODULE_NAME.fullmatch(stmt.module or ""):
            for alias in stmt.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = (stmt.module, alias.name)
    return names


def check_of(stmt, names):
    """One \`assert FN(ARGS) == EXPECTED\` as {module, function, args, expected}."""
    if not (isinstance(stmt, ast.Assert) and stmt.msg is None and isinstance(stmt.test, ast.Compare)):
        raise Unsupported("line %d is not \`assert FN(...) == VALUE\`" % stmt.lineno)
    test = stmt.test
    call = test.left
    if not (len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and isinstance(call, ast.Call)):
        raise Unsupported("line %d is not \`assert FN(...) == VALUE\`" % stmt.lineno)
    if not (isinstance(call.func, ast.Name) and call.func.id in names) or call.keywords:
        raise Unsupported("line %d calls something not imported by \`from MODULE import NAME\`" % stmt.lineno)
    if any(isinstance(a, ast.Starred) for a in call.args):
        raise Unsupported("line %d unpacks its arguments" % stmt.lineno)
    module, function = names[call.func.id]
    return {"module": module, "function": function, "args": [literal(a) for a in call.args],
            "expected": literal(test.comparators[0])}


def checks_in(source, test_name):
    """The checks of test_name in a test file's source; raises Unsupported for any other shape."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise Unsupported("the test file does not parse")
    names = imported_names(tree)
    found = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == test_name]
    if len(found) != 1:
        raise Unsupported("no single module-level function " + test_name)
    fn = found[0]
    if isinstance(fn, ast.AsyncFunctionDef) or fn.decorator_list or fn.args.args or fn.args.posonlyargs \\
            or fn.args.kwonlyargs or fn.args.vararg or fn.args.kwarg:
        raise Unsupported(test_name + " is not a plain \`def %s():\`" % test_name)
    return [check_of(stmt, names) for stmt in fn.body]


def checks_for(node_id, tests_dir):
    """A node id \`tests/test_x.py::test_y\`: its checks, read from the grader's copy of tests/."""
    m = NODE_ID.fullmatch(node_id)
    if not m:
        raise Unsupported("not a node id of the form tests/FILE.py::TEST")
    try:
        with open(os.path.join(tests_dir, m.group(1)), encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError):
        raise Unsupported("its test file cannot be read")
    return checks_in(source, m.group(2))


def reject_constant(name):
    raise ValueError("not plain JSON: " + name)


def decode_results(data, count):
    """The runner's reply (lines \`[index, "ok", value]\` or \`[index, "error", why]\`) as a list of
    count entries, each ("ok", value), ("error", why) or None (no answer). A trailing partial line
    (a runner stopped mid-write) is dropped; any other malformed line, or a second answer to one
    call, voids the reply: every call fails."""
    results = [None] * count
    for line in data.split(b"\\n")[:-1]:
        try:
            entry = json.loads(line.decode("utf-8"), parse_constant=reject_constant)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return [None] * count
        if not (type(entry) is list and len(entry) == 3 and type(entry[0]) is int and 0 <= entry[0] < count
                and entry[1] in ("ok", "error") and results[entry[0]] is None and plain(entry[2])
                and (entry[1] == "ok" or type(entry[2]) is str)):
            return [None] * count
        results[entry[0]] = (entry[1], entry[2])
    return results
`;
