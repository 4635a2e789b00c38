"""Errors of our own and of unusable input; failures of the kernel under test are report fields."""


class KdebugError(Exception):
    """Base class for errors kdebug raises on purpose."""


class InvalidInput(KdebugError):
    """The user's input cannot be used (missing file, syntax error, no Model/ModelNew, bad flag).

    The message is one line, shown as is at the CLI and MCP boundary.
    """


class SandboxError(KdebugError):
    """The sandbox itself failed (not the candidate): a worker could not be started."""
