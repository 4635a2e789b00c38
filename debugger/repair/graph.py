"""The repair graph: every node, edge and router of the debug loop, in this one file.

    START -> evaluate --pass--> integrity
                |fail
             diagnose -> retrieve -> propose --none--> finish
                                        |
                                      apply -> verify -> guard --passed--> harden -> integrity --accept--> distil -> finish
                                                          |  |                          |reject (budget left)
                                      (better: re-diagnose)  (else: next)               propose
                                              diagnose    propose
    guard --a guard fired--> finish -> END

Nodes (debugger/repair/nodes.py) return state updates; only this file decides where to go next.
`graph.mmd` beside it is rendered from this graph (`python -m debugger.repair.graph`) and tested for drift.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from langgraph.graph import END, START, StateGraph

from debugger.repair import nodes
from debugger.repair.state import RepairState, RunContext

MERMAID_PATH = Path(__file__).with_name("graph.mmd")


def after_evaluate(state: RepairState) -> Literal["diagnose", "integrity", "finish"]:
    """A passing candidate goes straight to the gate; unusable input ends the run."""
    if state.get("stop") == "invalid_input":
        return "finish"
    if (state.get("verify") or {}).get("passed"):
        return "integrity"
    return "diagnose"


def after_propose(state: RepairState) -> Literal["apply", "finish"]:
    """No proposal left (or the backend failed): stop."""
    return "apply" if state.get("proposal") else "finish"


def after_guard(state: RepairState) -> Literal["harden", "finish", "diagnose", "propose"]:
    """Verified fixes go to the gate (through harden: layouts and tolerances the pipeline's verdict does
    not hold them to); a fired guard stops; a better version is re-diagnosed."""
    if (state.get("verify") or {}).get("passed"):
        return "harden"
    if state.get("stop"):
        return "finish"
    if state.get("needs_diagnosis"):
        return "diagnose"
    return "propose"


def after_integrity(state: RepairState) -> Literal["distil", "finish", "propose"]:
    """Only an accepted repair is distilled; a rejected one counts as a failed attempt."""
    verdict = (state.get("verdict") or {}).get("verdict")
    if verdict == "accept":
        return "distil"
    if state.get("stop") or state.get("candidate_src") == state.get("original_src"):
        return "finish"
    return "propose"


def build_graph(checkpointer=None):
    """Compile the repair graph; dependencies arrive per run as RunContext."""
    g = StateGraph(RepairState, context_schema=RunContext)
    for node in (nodes.evaluate, nodes.diagnose, nodes.retrieve, nodes.propose, nodes.apply, nodes.verify,
                 nodes.guard, nodes.harden, nodes.integrity, nodes.distil, nodes.finish):
        g.add_node(node.__name__, node)
    g.add_edge(START, "evaluate")
    g.add_conditional_edges("evaluate", after_evaluate, ["diagnose", "integrity", "finish"])
    g.add_edge("diagnose", "retrieve")
    g.add_edge("retrieve", "propose")
    g.add_conditional_edges("propose", after_propose, ["apply", "finish"])
    g.add_edge("apply", "verify")
    g.add_edge("verify", "guard")
    g.add_conditional_edges("guard", after_guard, ["harden", "finish", "diagnose", "propose"])
    g.add_edge("harden", "integrity")
    g.add_conditional_edges("integrity", after_integrity, ["distil", "finish", "propose"])
    g.add_edge("distil", "finish")
    g.add_edge("finish", END)
    return g.compile(checkpointer=checkpointer, name="kernel-repair")


def mermaid() -> str:
    """The diagram, rendered from the compiled graph."""
    return build_graph().get_graph().draw_mermaid()


if __name__ == "__main__":
    MERMAID_PATH.write_text(mermaid())
    print(f"wrote {MERMAID_PATH}")
