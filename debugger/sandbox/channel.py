"""Framing of messages between the parent and sandbox workers: a JSON header and an optional blob.

JSON rather than pickle, because the parent must never unpickle what candidate code produced;
tensor blobs are `torch.save` bytes loaded with `weights_only=True` on the receiving side.
"""
from __future__ import annotations

import io
import json
from multiprocessing.connection import Connection

from debugger.output import jsonable


def send(conn: Connection, header: dict, blob: bytes | None = None) -> None:
    """Send one message: a JSON header, then the blob if any."""
    header = dict(header, has_blob=blob is not None)
    conn.send_bytes(json.dumps(jsonable(header)).encode())
    if blob is not None:
        conn.send_bytes(blob)


def recv(conn: Connection) -> tuple[dict, bytes | None]:
    """Receive one message (blocking); raises EOFError when the other side is gone."""
    header = json.loads(conn.recv_bytes().decode())
    blob = conn.recv_bytes() if header.get("has_blob") else None
    return header, blob


def tensors_to_blob(tensors) -> bytes:
    """Serialise a list of plain CPU tensors (or None entries)."""
    import torch

    buf = io.BytesIO()
    torch.save(list(tensors), buf)
    return buf.getvalue()


def blob_to_tensors(blob: bytes) -> list:
    """Load tensors sent by another process without running any of its code."""
    import torch

    return torch.load(io.BytesIO(blob), weights_only=True)
