"""The runner the GPU test scripts share (bench/test_gpu*.py): one line per
test (PASS with its details as JSON, or FAIL with the error and its
traceback), then "N passed, M failed"; --json OUT writes every result,
-k NAME runs the tests whose name contains NAME (repeatable: any of them)."""

import argparse
import json
import traceback


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", help="write results here")
    parser.add_argument("-k", action="append",
                        help="run only tests whose name contains this "
                             "(repeatable: any of them)")
    return parser.parse_args()


def skip(script, why, json_path):
    """Reports a run that cannot happen here (no PyTorch, no GPU): exit 0."""
    print(f"SKIP {script}: {why}")
    if json_path:
        with open(json_path, "w") as out:
            json.dump({"skipped": why}, out)
    return 0


def run(tests, name_filter=None, json_path=None):
    """Runs `tests` (functions returning a dict of details or None); returns
    the exit status, 1 when any failed."""
    results = []
    passed = failed = 0
    for fn in tests:
        filters = [name_filter] if isinstance(name_filter, str) else \
            name_filter
        if filters and not any(f in fn.__name__ for f in filters):
            continue
        try:
            details = fn()
            passed += 1
            results.append({"test": fn.__name__, "ok": True,
                            "details": details})
            print(f"PASS {fn.__name__} "
                  f"{json.dumps(details) if details else ''}", flush=True)
        except Exception as error:  # noqa: BLE001 - report and go on
            failed += 1
            results.append({"test": fn.__name__, "ok": False,
                            "error": repr(error)})
            print(f"FAIL {fn.__name__}: {error}", flush=True)
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    if json_path:
        with open(json_path, "w") as out:
            json.dump({"passed": passed, "failed": failed, "tests": results},
                      out, indent=1)
    return 1 if failed else 0
