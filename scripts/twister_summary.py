#!/usr/bin/env python3
"""Read twister's JSON report and print one line per test case, then
`passed failed skipped` counts on the last line for scripts/test.sh.

Build-only scenarios (hardware platforms) count as one case each, reported
BUILT when the build passed. Filtered scenarios are not cases and are not
counted.
"""
import json
import sys


def main(path: str) -> int:
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    passed = failed = skipped = 0
    for suite in report.get("testsuites", []):
        status = suite.get("status", "")
        where = f"{suite.get('platform', '?')}"
        name = suite.get("name", "?")
        if status == "filtered":
            continue
        cases = suite.get("testcases", [])
        if status == "not run":
            # Built for a platform twister cannot run: the build is the case.
            print(f"  BUILT   {where:32} {name}")
            passed += 1
            continue
        if status == "error" or not cases:
            ok = status == "passed"
            print(f"  {'PASS' if ok else 'FAIL':7} {where:32} {name} ({status}: {suite.get('reason', '')})")
            if ok:
                passed += 1
            else:
                failed += 1
            continue
        for case in cases:
            case_status = case.get("status", "")
            ident = case.get("identifier", "?")
            if case_status == "passed":
                label = "PASS"
                passed += 1
            elif case_status in ("skipped", "filtered"):
                label = "SKIP"
                skipped += 1
            else:
                label = "FAIL"
                failed += 1
            print(f"  {label:7} {where:32} {ident}")
        if status in ("failed", "error") and all(c.get("status") == "passed" for c in cases):
            # The suite failed outside its cases (build, boot, harness).
            print(f"  FAIL    {where:32} {name} ({status}: {suite.get('reason', '')})")
            failed += 1
    print(f"{passed} {failed} {skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
