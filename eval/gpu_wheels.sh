#!/usr/bin/env bash
# Wheels for a GPU machine that has Python 3.12 with torch and triton (and numpy, matplotlib) but not
# kdebug's other dependencies, and cannot reach a package index. Fills .whl/ (git-ignored) with
#   - the kdebug wheel, built from this checkout (pip wheel --no-deps), and
#   - every dependency of kdebug's core install (no extras), transitively, at the exact version
#     installed in this checkout's .venv, for CPython 3.12 on x86-64 Linux; except those the GPU
#     machine has itself (HAVE below), so torch is never carried nor replaced.
# Carry .whl; on the GPU machine `eval/gpu_parallel.sh install` (or any of its commands) installs them
# with `pip install --no-index --find-links .whl` into a virtual environment that sees the machine's
# own torch (--system-site-packages).
set -euo pipefail
cd "$(dirname "$0")/.."
HAVE="${HAVE:-torch triton numpy matplotlib contourpy cycler fonttools kiwisolver pillow pyparsing packaging pip setuptools}"
rm -rf .whl  # no stale versions: --find-links would take the highest
mkdir .whl
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation -w .whl .
# The closure of kdebug's core requirements (markers evaluated for CPython 3.12 on Linux x86-64),
# as NAME==VERSION of this .venv.
mapfile -t spec < <(.venv/bin/python - $HAVE <<'PY'
import re
import sys
from importlib.metadata import PackageNotFoundError, distribution

from packaging.requirements import Requirement

env = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
       "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
       "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
have = {norm(n) for n in sys.argv[1:]}
seen = {}
todo = [Requirement(r) for r in distribution("kdebug").requires or [] if "extra ==" not in r]
while todo:
    r = todo.pop()
    name = norm(r.name)
    if (r.marker and not r.marker.evaluate(env)) or name in seen or name in have:
        continue
    try:
        d = distribution(r.name)
    except PackageNotFoundError:
        sys.exit(f"gpu_wheels: {r.name} is not installed in .venv (pip install -e '.[test]' first)")
    seen[name] = d.version
    todo += [Requirement(q) for q in d.requires or []]
print("\n".join(f"{n}=={v}" for n, v in sorted(seen.items())))
PY
)
plat=()
for n in 1 2014 2_17 2_24 2_27 2_28 2_31 2_34; do
  case $n in 1|2014) plat+=(--platform "manylinux${n}_x86_64");; *) plat+=(--platform "manylinux_${n}_x86_64");; esac
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
  -d .whl "${spec[@]}"
echo "gpu_wheels: ${#spec[@]} dependencies + $(ls .whl/kdebug-*.whl) in .whl ($(du -sh .whl | cut -f1))"
