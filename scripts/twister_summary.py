#!/usr/bin/env python3
"""Read twister's JSON report and print one line per configuration (its
case count), every failing case on a line of its own, failures first; then
`passed failed skipped` case counts on the last line for scripts/test.sh.

Build-only scenarios (hardware platforms) count as one case each, reported
BUILT when the build passed. Filtered scenarios are not cases and are not
counted.
"""
import json
import sys


def suite_lines(suite):
    """(failed?, lines, passed, failed, skipped) of one configuration."""
    status = suite.get("status", "")
    where = f"{suite.get('platform', '?'):32}"
    name = suite.get("name", "?")
    reason = f"({status}: {suite.get('reason', '')})"
    cases = suite.get("testcases", [])
    if status == "not run":
        # Built for a platform twister cannot run: the build is the case.
        return False, [f"  BUILT   {where} {name}"], 1, 0, 0
    if status == "error" or not cases:
        if status == "passed":
            return False, [f"  PASS    {where} {name}"], 1, 0, 0
        return True, [f"  FAIL    {where} {name} {reason}"], 0, 1, 0
    passed = sum(c.get("status") == "passed" for c in cases)
    skipped = sum(c.get("status") in ("skipped", "filtered") for c in cases)
    failing = [c for c in cases if c.get("status") not in ("passed", "skipped", "filtered")]
    lines = [f"  FAIL    {where} {c.get('identifier', '?')}" for c in failing]
    failed = len(failing)
    if status in ("failed", "error") and not failing:
        # The suite failed outside its cases (build, boot, harness).
        lines.append(f"  FAIL    {where} {name} {reason}")
        failed += 1
    if not lines:
        extra = f", {skipped} skipped" if skipped else ""
        lines = [f"  PASS    {where} {name} ({passed} cases{extra})"]
    return bool(failed), lines, passed, failed, skipped


def main(path: str) -> int:
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    totals = [0, 0, 0]
    bad, good = [], []
    for suite in report.get("testsuites", []):
        if suite.get("status", "") == "filtered":
            continue
        failed, lines, *counts = suite_lines(suite)
        (bad if failed else good).extend(lines)
        totals = [t + c for t, c in zip(totals, counts)]
    for line in bad + good:
        print(line)
    print(*totals)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
