"""The integrity gate: does a candidate really compute the operator with its own kernels?

static.py runs the rule registry (rules.py, the rules themselves in checks/) over the candidate's
tree-sitter syntax tree; dynamic.py watches the candidate run; gate.py joins both into a verdict.
Every check reports `Finding`s (findings.py); any finding of severity reject fails the gate.
"""
