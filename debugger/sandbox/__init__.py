"""The sandbox: the only place that runs candidate (untrusted) and reference code.

Parent side: `Sandbox` (pool.py) keeps a warm zygote per device that forks a fresh worker per role
(reference, candidate) for each evaluation. Child side: zygote.py, guard.py (limits, audit hooks),
roles.py (what a worker does). Messages are JSON headers plus raw tensor blobs (channel.py): the
parent never unpickles anything a candidate produced.
"""
from debugger.sandbox.pool import Sandbox, Worker, WorkerDied, WorkerTimeout, get_sandbox

__all__ = ["Sandbox", "Worker", "WorkerDied", "WorkerTimeout", "get_sandbox"]
