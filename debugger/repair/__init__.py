"""The repair loop: state, nodes and the driver around the graph in repair/graph.py."""
from debugger.repair.run import RepairResult, repair

__all__ = ["RepairResult", "repair"]
