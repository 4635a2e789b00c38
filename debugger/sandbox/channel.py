"""Framing of messages between the parent and sandbox workers: a JSON header and an optional blob.

JSON rather than pickle, because the parent must never unpickle what candidate code produced;
tensor blobs are `torch.save` bytes loaded with `weights_only=True` on the receiving side.

A worker's large blob (GPU-sized outputs: hundreds of MB per check) does not go through the socket:
the worker writes it into chunk files in its scratch folder (chunks stay under the worker's file-size
limit) and sends their paths. The parent holds them as a SpilledBlob, which it can hand to another
worker without reading it, and which deletes its files once the parent drops it.
"""
from __future__ import annotations

import io
import itertools
import json
import os
from multiprocessing.connection import Connection
from pathlib import Path

from debugger.output import jsonable


SPILL_BYTES = 8 << 20  # blobs above this travel as files when the sender has a spill folder
CHUNK_BYTES = 48 << 20  # below the workers' 64 MiB file-size limit (guard.apply_limits)
_spill_dir: Path | None = None
_spill_ids = itertools.count()


class SpilledBlob:
    """Blob bytes left in files (a worker's scratch); deleted when the owning process drops the object."""

    def __init__(self, paths: list[str], size: int, owner: bool):
        self.paths, self.size, self.owner = list(paths), int(size), owner

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        parts = []
        for p in self.paths:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)  # the sender could swap a chunk for a link
            with os.fdopen(fd, "rb") as f:
                parts.append(f.read())
        return b"".join(parts)

    def __del__(self):
        if self.owner:
            for p in self.paths:
                try:
                    os.unlink(p)
                except OSError:
                    pass


def spill_to(folder: Path) -> None:
    """Make this process (a worker) write its large blobs into `folder` instead of the socket."""
    global _spill_dir
    folder.mkdir(parents=True, exist_ok=True)
    _spill_dir = folder


def _spill(blob: bytes) -> list[str]:
    n = next(_spill_ids)
    paths = []
    for i in range(0, len(blob), CHUNK_BYTES):
        p = _spill_dir / f"blob-{os.getpid()}-{n}-{i // CHUNK_BYTES}"
        p.write_bytes(memoryview(blob)[i:i + CHUNK_BYTES])
        paths.append(str(p))
    return paths


def send(conn: Connection, header: dict, blob: bytes | SpilledBlob | None = None) -> None:
    """Send one message: a JSON header, then the blob if any (or the paths of its files)."""
    files = None
    if isinstance(blob, SpilledBlob):
        files, size, blob = blob.paths, blob.size, None
    elif blob is not None and _spill_dir is not None and len(blob) > SPILL_BYTES:
        files, size, blob = _spill(blob), len(blob), None
    header = dict(header, has_blob=blob is not None)
    if files is not None:
        header.update(blob_files=files, blob_size=size)
    conn.send_bytes(json.dumps(jsonable(header)).encode())
    if blob is not None:
        conn.send_bytes(blob)


def recv(conn: Connection, spill_root: Path | None = None) -> tuple[dict, bytes | SpilledBlob | None]:
    """Receive one message (blocking); raises EOFError when the other side is gone.

    Blob files are accepted only as regular files directly named by the sender inside `spill_root`
    (the sending worker's scratch, when the parent receives; anything, when a worker receives from the
    parent); the receiver owns, and deletes, files a worker sent it.
    """
    header = json.loads(conn.recv_bytes().decode())
    blob = conn.recv_bytes() if header.get("has_blob") else None
    files = header.pop("blob_files", None)
    if files is not None:
        size = header.pop("blob_size", 0)
        if spill_root is not None:
            root = os.path.realpath(spill_root)
            for p in files:
                if not (isinstance(p, str) and os.path.realpath(p).startswith(root + os.sep)
                        and not os.path.islink(p) and os.path.isfile(p)):
                    raise ValueError(f"blob file outside the worker's scratch: {p!r}")
        blob = SpilledBlob(files, size, owner=spill_root is not None)
    return header, blob


def blob_bytes(blob: bytes | SpilledBlob) -> bytes:
    return blob.read() if isinstance(blob, SpilledBlob) else blob


def tensors_to_blob(tensors) -> bytes:
    """Serialise a list of plain CPU tensors (or None entries)."""
    import torch

    buf = io.BytesIO()
    torch.save(list(tensors), buf)
    return buf.getvalue()


def blob_to_tensors(blob: bytes) -> list:
    """Load tensors sent by another process without running any of its code."""
    import torch

    return torch.load(io.BytesIO(blob_bytes(blob)), weights_only=True)
