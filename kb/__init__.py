"""The curated knowledge base as files: patterns/ and reference_kernels/.

Installed as the package data `debugger.kb` (pyproject maps that package onto this folder), found at
run time through importlib.resources; see debugger.settings.curated_kb_dir. Nothing here is code.
"""
