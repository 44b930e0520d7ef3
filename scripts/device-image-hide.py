#!/usr/bin/env python3
"""Lists what the GPU machine does not have, for scripts/device-rehearsal.sh.

The GPU machine's image has the CUDA toolkit, a C toolchain, CMake and Python, but none of the
Debian packages that scripts/install-deps.sh installs here (it has no package registry at all).
This prints, one absolute path a line, every file and symbolic link that those packages and the
run-time libraries they pulled in put on this machine, so that the rehearsal can hide them:

    hidden packages = closure(install-deps.sh's packages) - closure(what the image keeps)

where closure() follows Depends and Pre-Depends through installed packages (alternatives and
virtual packages resolved to what is installed), and "what the image keeps" is the toolchain,
CMake, Python and every Essential or Priority required/important package. Links under
/etc/alternatives (and the links pointing at them) whose target is hidden are hidden too.

Usage: device-image-hide.py PACKAGE...         (the packages install-deps.sh installs)
       device-image-hide.py --packages PKG...  (print the hidden packages instead of paths)
Exit status 0; 2 when dpkg-query is missing or a named package is not installed.
"""
import os
import re
import subprocess
import sys

# What the GPU image has besides the essential system: the build toolchain, CMake (a pip package
# there), Python 3, git. Packages named in install-deps.sh that are also here stay visible.
KEEP_ROOTS = ["build-essential", "gcc", "g++", "make", "libc6-dev", "cmake", "python3", "git",
              "bash", "coreutils", "util-linux", "iproute2", "procps", "gzip", "findutils"]


def installed_packages():
    """{name: (essential, priority, [dependency groups], [provides])} of installed packages."""
    fmt = "${Package}\t${Status}\t${Essential}\t${Priority}\t${Pre-Depends}\t${Depends}\t${Provides}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], check=True, capture_output=True,
                         text=True).stdout
    pk = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 7 or not f[1].endswith(" installed"):
            continue
        deps = [g for g in (f[4] + "," + f[5]).split(",") if g.strip()]
        groups = [[re.sub(r"[\s(:].*", "", a.strip()) for a in g.split("|")] for g in deps]
        prov = [re.sub(r"[\s(].*", "", p.strip()) for p in f[6].split(",") if p.strip()]
        pk[f[0]] = (f[2] == "yes", f[3], groups, prov)
    return pk


def closure(roots, pk, providers):
    """Installed packages reachable from roots through Depends/Pre-Depends."""
    seen, todo = set(), [r for r in roots if r in pk or r in providers]
    while todo:
        n = todo.pop()
        for real in ([n] if n in pk else providers.get(n, [])):
            if real in seen:
                continue
            seen.add(real)
            for group in pk[real][2]:
                for alt in group:  # every installed alternative: any of them may be the one used
                    if alt in pk or alt in providers:
                        todo.append(alt)
    return seen


def package_paths(names):
    """Files and links (not folders) of the packages, with /lib, /bin, /sbin merged into /usr."""
    paths = set()
    for n in sorted(names):
        r = subprocess.run(["dpkg-query", "-L", n], capture_output=True, text=True)
        for p in r.stdout.splitlines():
            if not p.startswith("/") or p in ("/.",):
                continue
            if os.path.islink(p) or os.path.isfile(p):
                paths.add(os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p)))
    return paths


def alternative_links(hidden):
    """/etc/alternatives links that resolve into hidden files, and links in /usr pointing at them."""
    alts = set()
    d = "/etc/alternatives"
    for e in os.listdir(d) if os.path.isdir(d) else []:
        p = os.path.join(d, e)
        if os.path.islink(p) and os.path.realpath(p) in hidden:
            alts.add(p)
    links = set(alts)
    for top in ("/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu", "/usr/include",
                "/usr/share/man"):
        for root, _, files in os.walk(top):
            for f in files:
                p = os.path.join(root, f)
                if os.path.islink(p) and os.readlink(p) in alts:
                    links.add(p)
    return links


def main(argv):
    want_pkgs = argv[:1] == ["--packages"]
    roots = argv[1:] if want_pkgs else argv
    try:
        pk = installed_packages()
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"device-image-hide: dpkg-query failed: {e}", file=sys.stderr)
        return 2
    missing = [r for r in roots if r not in pk]
    if missing:
        print(f"device-image-hide: not installed: {' '.join(missing)} "
              "(run scripts/install-deps.sh first)", file=sys.stderr)
        return 2
    providers = {}
    for n, (_, _, _, prov) in pk.items():
        for p in prov:
            providers.setdefault(p, []).append(n)
    keep_roots = [n for n in KEEP_ROOTS if n in pk]
    keep_roots += [n for n, v in pk.items() if v[0] or v[1] in ("required", "important")]
    hidden = closure(roots, pk, providers) - closure(keep_roots, pk, providers)
    if want_pkgs:
        print("\n".join(sorted(hidden)))
        return 0
    paths = package_paths(hidden)
    paths |= alternative_links(paths)
    print("\n".join(sorted(paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
