"""`kdebug repair-batch`: working the repair queue with several workers, resumably.

    from debugger.batch import BatchOptions, run_batch
    summary = run_batch(BatchOptions(workers=2))          # -> BatchSummary (summary.to_dict())

The queue (`queue`, filled by `kdebug ingest`) hands out entries atomically under leases; `task` repairs one entry with
`repair()` as `kdebug repair` would; `worker` is the local worker process loop and `local` the driver
that starts and watches those processes; `ray_runner` sends one Ray task per entry to a cluster
instead; `devices` plans the workers, `progress` draws the bar, `summary` the final table and JSON.
"""
from debugger.batch.run import BatchOptions, run_batch
from debugger.batch.summary import BatchSummary

__all__ = ["BatchOptions", "BatchSummary", "run_batch"]
