"""The one Python source layer: what every part of kdebug reads of a candidate's Python file.

`tree` parses with tree-sitter and answers the basic questions of a node (text, line, walk, enclosing,
call arguments, literals); `edits` turns byte-range edits into a new source; `imports` resolves names
through the file's imports and aliases; `kernels` is the one finder of the file's Triton kernels and
their launch sites (the recipes' view, the host model and the Triton language all read it); `host` is
the host model of the file (its imports, classes and functions, what ModelNew.forward reaches, its
launches) and `bindings` how it binds and calls its compiled extensions. The recipes' Triton kernel
model (recipes/syntax.py), the integrity gate, diagnosis and the knowledge base's token view
(knowledge/pysource.py) all stand on it; nothing here imports another kdebug package.
"""
