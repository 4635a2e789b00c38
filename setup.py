"""Build configuration pyproject.toml cannot say: the packages are found (debugger, ingest and
their subpackages), plus `debugger.kb`, which is the repository's kb/ folder (the curated knowledge
base, kept at the root as reviewable files) shipped as package data. Everything else: pyproject.toml."""
from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["debugger", "debugger.*", "ingest", "ingest.*"]),
                "debugger.kb"],
      package_dir={"debugger.kb": "kb"})
