#!/usr/bin/env python3
"""Merges ctest JUnit reports: junit-merge.py INTO.xml REPORT.xml

Appends REPORT's <testcase> elements to INTO's single <testsuite> (INTO is created from REPORT
when missing or unreadable) and updates the suite's tests/failures/skipped counts, so that one
file holds every ctest run of a device call (scripts/device-first.sh). Written to a temporary
file and renamed: a call cut off mid-merge leaves the previous INTO whole. A missing or broken
REPORT leaves INTO as it was (exit 1).
"""
import os
import sys
import xml.etree.ElementTree as ET


def main(into, report):
    try:
        new = ET.parse(report).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"junit-merge: {report}: {e}", file=sys.stderr)
        return 1
    new_suite = new if new.tag == "testsuite" else new.find("testsuite")
    try:
        root = ET.parse(into).getroot()
        suite = root if root.tag == "testsuite" else root.find("testsuite")
        for tc in new_suite.iter("testcase"):
            suite.append(tc)
    except (OSError, ET.ParseError):
        root = new
        suite = new_suite
    cases = list(suite.iter("testcase"))
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None
                                  or (c.get("status") or "").lower() == "fail")))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    tmp = into + ".tmp"
    ET.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, into)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
