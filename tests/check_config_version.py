#!/usr/bin/env python3
"""ZS_CONFIG_VERSION follows zs_config's fields (ctest config_version): tests/config_versions.txt
records each version's field list, one line "N: field field ...". The header's fields, in order,
must be the list of the header's ZS_CONFIG_VERSION, the versions must run 1, 2, ... up to it, and
each version's list must extend the one before it (fields are only appended: a program built with
an older header passes a shorter struct, whose fields keep their places). Adding a field fails
this check until ZS_CONFIG_VERSION is bumped and the new version's line is appended.
Usage: check_config_version.py REPO_ROOT
"""
import os
import re
import sys


def header_fields(header):
    text = open(header).read()
    tail = text[text.index("#define ZS_CONFIG_VERSION"):]
    m = re.search(r"typedef struct \{\n(.*?)\} zs_config;", tail, re.S)
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    body = re.sub(r"struct\s*\{[^}]*\}", "struct", body)  # a nested struct counts as its field
    # an anonymous union of aliases counts as one field, named by its last member (the older name)
    body = re.sub(r"union\s*\{[^}]*?(\w+)\s*;\s*\}", r"union \1", body)
    fields = []
    for decl in body.split(";"):
        decl = decl.strip()
        if decl:
            head, _, rest = decl.partition(" ")
            for part in (head + " " + rest).split(","):
                fields.append(re.findall(r"\w+", part)[-1])
    version = int(re.search(r"#define ZS_CONFIG_VERSION (\d+)", text).group(1))
    return version, fields


def recorded(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            n, _, names = line.partition(":")
            out[int(n)] = names.split()
    return out


def main(root):
    version, fields = header_fields(os.path.join(root, "include", "zshard.h"))
    rec = recorded(os.path.join(root, "tests", "config_versions.txt"))
    bad = []
    if sorted(rec) != list(range(1, max(rec) + 1)):
        bad.append("config_versions.txt: versions %s do not run 1, 2, ..." % sorted(rec))
    for v in sorted(rec)[1:]:
        if rec[v][: len(rec[v - 1])] != rec[v - 1] or len(rec[v]) <= len(rec[v - 1]):
            bad.append("version %d does not extend version %d by appended fields" % (v, v - 1))
    if version != max(rec):
        bad.append("ZS_CONFIG_VERSION is %d, the newest recorded version %d" % (version, max(rec)))
    elif rec[version] != fields:
        new = [f for f in fields if f not in rec[version]]
        bad.append("zs_config's fields differ from version %d's list (new: %s): a field added to "
                   "zs_config bumps ZS_CONFIG_VERSION to %d and appends '%d: %s' to "
                   "tests/config_versions.txt" % (version, " ".join(new) or "none, but the order "
                   "or names changed", version + 1, version + 1, " ".join(fields)))
    for b in bad:
        print("check_config_version: " + b)
    print("check_config_version: %d fields, version %d%s" % (len(fields), version,
                                                             "" if not bad else ": FAILED"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
