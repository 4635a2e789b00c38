"""The integrity gate: does a candidate really compute the operator with its own kernels?

static.py runs the rule registry (rules.py, checks/) over the tree-sitter syntax tree; dynamic.py
watches the candidate run. Both report `Finding`s (findings.py); any finding of severity reject
fails the gate.
"""
