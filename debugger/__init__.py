"""kdebug: the debug agent for near-miss GPU kernels.

Public library surface: load a case, evaluate it, diagnose it, check its integrity, repair it.
"""
__version__ = "0.1.0"
