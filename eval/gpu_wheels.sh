#!/usr/bin/env bash
# Wheels for a GPU machine that has torch and triton but not kdebug's pure-Python dependencies and
# cannot reach PyPI: downloads, for CPython 3.12 on x86-64 Linux, the exact versions installed in this
# checkout's .venv into .whl/ (git-ignored). On the GPU machine:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
# then eval/gpu_parallel.sh (its first step checks the imports and stops at once if one is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS="annotated-types anyio click click-default-group distro h11 httpcore httpcore2 httpx httpx2 jsonpatch jsonpointer
langchain-core langchain-protocol langgraph langgraph-checkpoint langgraph-checkpoint-sqlite langgraph-prebuilt
langgraph-sdk langsmith orjson ormsgpack platformdirs pluggy pydantic pydantic_core python-dateutil requests-toolbelt
sniffio sqlite-fts4 sqlite-utils sqlite-vec aiosqlite tabulate tenacity tree-sitter tree-sitter-python truststore
typing-inspection typing_extensions tzdata uuid_utils websockets xxhash zstandard"
spec=()
for p in $PKGS; do
  v=$(.venv/bin/pip show "$p" 2>/dev/null | awk '/^Version:/{print $2}')
  [ -n "$v" ] && spec+=("$p==$v") || echo "not in .venv, skipped: $p" >&2
done
plat=()
for n in 1 2014 2_17 2_24 2_27 2_28 2_31 2_34; do
  case $n in 1|2014) plat+=(--platform "manylinux${n}_x86_64");; *) plat+=(--platform "manylinux_${n}_x86_64");; esac
done
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
  -d .whl "${spec[@]}"
ls .whl | wc -l
