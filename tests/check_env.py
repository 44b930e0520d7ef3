#!/usr/bin/env python3
"""The one tunables table (ctest env_table): every environment variable the libraries read is
documented in README's "Configuration knobs" section, and nothing else is.

- libzshard reads its variables only through src/base/config.c: no other file of src/ calls
  getenv, except the checkpoint test hooks (src/ckpt/ckpt_hooks.c, compiled only into the test
  build) and the kernels library (src/kernels/, its own library, whose variables are listed too);
- every zs_env("NAME") in src/ names a variable of config.c's table (else zs_env answers NULL);
- the "variable" column of the tables in README's "Configuration knobs" lists exactly config.c's
  table plus the kernels' variables.
Usage: check_env.py REPO_ROOT
"""
import os
import re
import sys

HOOKS = "ckpt/ckpt_hooks.c"  # the test build's hooks: not the shipped library's settings


def table_names(config_c):
    text = open(config_c).read()
    start = text.index("zs_tunables[] = {")
    body = text[start:text.index("};", start)]
    return set(re.findall(r'(?:TUNW|TUN|ENV|PATH)\("([A-Z0-9_]+)"', body))


def readme_names(readme):
    text = open(readme).read()
    m = re.search(r"^## Configuration knobs\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        return None
    names = set()
    col = None
    for line in m.group(1).splitlines():
        if not line.startswith("|"):
            col = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if col is None:
            col = cells.index("variable") if "variable" in cells else -1
            continue
        if col < 0 or col >= len(cells) or set(cells[0]) <= set("-"):
            continue
        names |= set(re.findall(r"`([A-Z][A-Z0-9_]*)`", cells[col]))
    return names


def main(root):
    src = os.path.join(root, "src")
    failures = []
    table = table_names(os.path.join(src, "base", "config.c"))
    kernels = set()
    for dirpath, _, files in os.walk(src):
        for n in sorted(files):
            if not re.search(r"\.(c|h|cu|cuh)$", n):
                continue
            path = os.path.join(dirpath, n)
            rel = os.path.relpath(path, src)
            text = open(path, errors="replace").read()
            for no, line in enumerate(text.splitlines(), 1):
                code = line.split("//", 1)[0]
                for name in re.findall(r'\bzs_env\("([^"]+)"\)', code):
                    if name not in table:
                        failures.append(f"src/{rel}:{no}: zs_env(\"{name}\") is not in config.c's "
                                        f"table: add it there and to README")
                if not re.search(r"\bgetenv\s*\(", code) or rel == "base/config.c" or rel == HOOKS:
                    continue
                if rel.startswith("kernels/"):
                    kernels |= set(re.findall(r'\bgetenv\s*\(\s*"([^"]+)"', code))
                    continue
                failures.append(f"src/{rel}:{no}: getenv outside src/base/config.c: add the "
                                f"variable to the tunables table and read it with zs_env()")
    documented = readme_names(os.path.join(root, "README.md"))
    if documented is None:
        failures.append("README.md: no '## Configuration knobs' section")
        documented = set()
    read = table | kernels
    for name in sorted(read - documented):
        failures.append(f"README.md: {name} is read by the library but not listed in "
                        f"'Configuration knobs'")
    for name in sorted(documented - read):
        failures.append(f"README.md: 'Configuration knobs' lists {name}, which no library reads")
    print(f"check_env: {len(table)} variables in config.c's table, {len(kernels)} read by the "
          f"kernels, {len(documented)} in README")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
