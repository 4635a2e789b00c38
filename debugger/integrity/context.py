"""Everything the rules read about one candidate, computed once and shared (lazily) between rules."""
from __future__ import annotations

from functools import cached_property

from tree_sitter import Node

from debugger.integrity import branches
from debugger.integrity.compute import ComputeSite, compute_sites
from debugger.integrity.launchconfig import meta_parameters
from debugger.integrity.reference import ReferenceProfile
from debugger.integrity.values import Kind, ValueKinds
from debugger.source.host import Function, Launch, SourceModule
from debugger.source.tree import text, walk


class Context:
    """The candidate's syntax facts, its forward path, value kinds, compute sites, and the reference profile."""

    def __init__(self, candidate: SourceModule, reference: ReferenceProfile, *, strict_precision: bool = False,
                 policy: str = "kernelbench", measured=None):
        self.candidate = candidate
        self.reference = reference
        self.strict_precision = strict_precision
        self.policy = policy
        self.measured = measured  # the run's measured PyTorch work (integrity/work.py), when the gate ran it

    @cached_property
    def forward(self) -> Function | None:
        """ModelNew.forward, if the file defines it."""
        return self.candidate.entry("ModelNew")

    @cached_property
    def forward_path(self) -> list[Function]:
        """ModelNew.forward and every in-file Python function it reaches (kernels excluded), with the
        forward of every in-file submodule ModelNew builds (`self.layers = nn.Sequential(Block(...))`)."""
        return self.candidate.forward_path("ModelNew") if self.forward else []

    @cached_property
    def kinds(self) -> ValueKinds:
        """Value kinds along the forward path."""
        return ValueKinds(self.candidate, self.forward_path, self.forward)

    @cached_property
    def sites(self) -> list[ComputeSite]:
        """PyTorch computations along the forward path (not in code the task never runs)."""
        return [s for s in compute_sites(self.candidate, self.forward_path, self.kinds) if not self.dead(s.node)]

    @cached_property
    def main_path_sites(self) -> list[ComputeSite]:
        """The compute sites every call runs: not one side of a kernel-or-PyTorch branch."""
        return [s for s in self.sites if not branches.in_fallback(s.node, s.function, self.launches)]

    @property
    def task_dtype(self) -> str:
        """The dtype of the task's floating inputs, as far as the reference says."""
        return "float16" if self.reference.low_precision else "float32"

    def dead(self, node: Node) -> bool:
        """The node is in an `if flag:` branch that no call on the forward path enables."""
        fn = self.function_at(node)
        return fn is not None and branches.in_dead_flag_branch(node, fn, self.candidate, self.forward_path)

    @cached_property
    def launches(self) -> list[Launch]:
        """Kernel launches along the forward path."""
        return [launch for fn in self.forward_path for launch in self.candidate.launches(fn)]

    @cached_property
    def meta_parameters(self) -> set[str]:
        """Parameters the candidate's kernels declare tl.constexpr (launch configuration)."""
        return meta_parameters(self.candidate.kernels)

    @cached_property
    def reachable_kernels(self) -> set[str]:
        """Kernels the forward path names, with the @triton.jit helpers they call."""
        return self.candidate.reachable_kernels(self.forward_path)

    @cached_property
    def reference_classes(self) -> frozenset[str]:
        """Reference class names that mean the reference here: Model, and helpers the candidate does not redefine."""
        own = set(self.candidate.classes)
        return frozenset(n for n in self.reference.class_names if n == "Model" or n not in own) - {"ModelNew"}

    def kind(self, node: Node | None) -> Kind:
        """The kind of an expression on the forward path (OTHER elsewhere)."""
        if node is None:
            return Kind.OTHER
        fn = self.function_at(node)
        return self.kinds.kind(node, fn) if fn is not None else Kind.OTHER

    def function_at(self, node: Node) -> Function | None:
        """The forward-path function containing `node`."""
        for fn in self.forward_path:
            if fn.node.start_byte <= node.start_byte < fn.node.end_byte:
                return fn
        return None

    def forward_nodes(self, *types: str):
        """(function, node) for every node of the given types on the forward path."""
        for fn in self.forward_path:
            for node in walk(fn.body):
                if node.type in types and not branches.in_dead_flag_branch(node, fn, self.candidate,
                                                                           self.forward_path):
                    yield fn, node

    def file_nodes(self, *types: str):
        """Every node of the given types anywhere in the candidate file."""
        return (node for node in walk(self.candidate.root) if node.type in types)

    def resolve(self, node: Node | None) -> str:
        """The qualified name an expression refers to, '' if it is not an imported name."""
        return self.candidate.resolve(node) or ""

    def source(self, node: Node) -> str:
        """A node's text, shortened for messages."""
        snippet = " ".join(text(node).split())
        return snippet if len(snippet) <= 60 else snippet[:57] + "..."
