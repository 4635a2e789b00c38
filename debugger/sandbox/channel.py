"""Framing of messages between the parent and sandbox workers: a JSON header and an optional blob.

JSON rather than pickle, because the parent must never unpickle what candidate code produced;
small tensor blobs are `torch.save` bytes loaded with `weights_only=True` on the receiving side.

A worker's large tensors (GPU-sized outputs: hundreds of MB per check) do not go through the socket:
the worker writes their raw bytes into chunk files in its scratch folder (chunks stay under the
worker's file-size limit) and sends the paths with a JSON manifest (dtype and shape of each tensor).
The parent holds them as a SpilledBlob, which it can hand to another worker without reading it, and
which deletes its files once the parent drops it. Nothing on this path is ever unpickled.
"""
from __future__ import annotations

import io
import itertools
import json
import os
from multiprocessing.connection import Connection
from pathlib import Path

from debugger.output import jsonable

SPILL_BYTES = 8 << 20  # tensors above this travel as files when the sender has a spill folder
CHUNK_BYTES = 48 << 20  # below the workers' 64 MiB file-size limit (guard.apply_limits)
RAW_DTYPES = {"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
              "complex64", "complex128"}
_spill_dir: Path | None = None
_spill_ids = itertools.count()


class TensorBlob:
    """Tensors (nested lists of CPU tensors, None and plain numbers) a worker is about to send."""

    def __init__(self, tree):
        self.tree = tree

    def leaves(self):
        import torch

        stack = [self.tree]
        while stack:
            node = stack.pop()
            if isinstance(node, (list, tuple)):
                stack.extend(node)
            elif isinstance(node, torch.Tensor):
                yield node

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.leaves())

    def raw_ok(self) -> bool:
        return all(str(t.dtype).replace("torch.", "") in RAW_DTYPES for t in self.leaves())


class SpilledBlob:
    """Blob data left in files (a worker's scratch); deleted when the owning process drops the object.
    With a manifest the files hold raw tensor bytes; without, `torch.save` bytes."""

    def __init__(self, paths: list[str], size: int, owner: bool, manifest=None):
        self.paths, self.size, self.owner, self.manifest = list(paths), int(size), owner, manifest

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytearray:
        out = bytearray(self.size)
        _ChunkReader(self.paths).readinto(memoryview(out))
        return out

    def __del__(self):
        if self.owner:
            for p in self.paths:
                try:
                    os.unlink(p)
                except OSError:
                    pass


class _ChunkWriter:
    """Writes one byte stream into consecutive files of at most CHUNK_BYTES."""

    def __init__(self):
        self.stem = _spill_dir / f"blob-{os.getpid()}-{next(_spill_ids)}"
        self.paths: list[str] = []
        self.file = None
        self.left = 0

    def write(self, data: memoryview) -> None:
        while len(data):
            if self.left == 0:
                self.close()
                path = f"{self.stem}-{len(self.paths)}"
                self.file = open(path, "wb", buffering=0)
                self.paths.append(path)
                self.left = CHUNK_BYTES
            n = min(self.left, len(data))
            written = self.file.write(data[:n])
            data, self.left = data[written:], self.left - written

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


class _ChunkReader:
    """Reads the stream of a _ChunkWriter back; refuses links (the sender could swap a chunk for one)."""

    def __init__(self, paths: list[str]):
        self.paths = list(paths)
        self.file = None

    def readinto(self, view: memoryview) -> None:
        at = 0
        while at < len(view):
            if self.file is None:
                if not self.paths:
                    raise ValueError("blob files end before the data they announce")
                self.file = os.fdopen(os.open(self.paths.pop(0), os.O_RDONLY | os.O_NOFOLLOW), "rb", buffering=0)
            n = self.file.readinto(view[at:])
            if not n:
                self.file.close()
                self.file = None
            at += n or 0


def spill_to(folder: Path) -> None:
    """Make this process (a worker) write its large blobs into `folder` instead of the socket."""
    global _spill_dir
    folder.mkdir(parents=True, exist_ok=True)
    _spill_dir = folder


def _write_raw(blob: TensorBlob) -> tuple[list[str], int, object]:
    import torch

    writer = _ChunkWriter()

    def put(node):
        if isinstance(node, (list, tuple)):
            return [put(x) for x in node]
        if isinstance(node, torch.Tensor):
            t = node.detach().contiguous()
            nbytes = t.numel() * t.element_size()
            if nbytes:
                writer.write(memoryview(t.reshape(-1).view(torch.uint8).numpy()))
            return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "nbytes": nbytes}
        return {"value": node}

    try:
        manifest = put(blob.tree)
    finally:
        writer.close()
    return writer.paths, blob.nbytes, manifest


def _spill_bytes(blob: bytes) -> list[str]:
    writer = _ChunkWriter()
    try:
        writer.write(memoryview(blob))
    finally:
        writer.close()
    return writer.paths


def send(conn: Connection, header: dict, blob: bytes | TensorBlob | SpilledBlob | None = None) -> None:
    """Send one message: a JSON header, then the blob if any (or the paths of its files)."""
    extra = {}
    if isinstance(blob, SpilledBlob):
        extra = {"blob_files": blob.paths, "blob_size": blob.size, "blob_manifest": blob.manifest}
        blob = None
    elif isinstance(blob, TensorBlob):
        if _spill_dir is not None and blob.nbytes > SPILL_BYTES and blob.raw_ok():
            paths, size, manifest = _write_raw(blob)
            extra = {"blob_files": paths, "blob_size": size, "blob_manifest": manifest}
            blob = None
        else:
            blob = tensors_to_blob(blob.tree)
    if isinstance(blob, (bytes, bytearray)) and _spill_dir is not None and len(blob) > SPILL_BYTES:
        extra = {"blob_files": _spill_bytes(blob), "blob_size": len(blob), "blob_manifest": None}
        blob = None
    header = dict(header, has_blob=blob is not None, **extra)
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
    size, manifest = header.pop("blob_size", 0), header.pop("blob_manifest", None)
    if files is not None:
        if spill_root is not None:
            root = os.path.realpath(spill_root)
            for p in files:
                if not (isinstance(p, str) and os.path.realpath(p).startswith(root + os.sep)
                        and not os.path.islink(p) and os.path.isfile(p)):
                    raise ValueError(f"blob file outside the worker's scratch: {p!r}")
        blob = SpilledBlob(files, size, owner=spill_root is not None, manifest=manifest)
    return header, blob


def blob_bytes(blob: bytes | SpilledBlob) -> bytes | bytearray:
    return blob.read() if isinstance(blob, SpilledBlob) else blob


def tensors_to_blob(tensors) -> bytes:
    """Serialise a list of plain CPU tensors (or None entries)."""
    import torch

    buf = io.BytesIO()
    torch.save(list(tensors), buf)
    return buf.getvalue()


def _read_raw(blob: SpilledBlob):
    import torch

    reader = _ChunkReader(blob.paths)

    def get(node):
        if isinstance(node, list):
            return [get(x) for x in node]
        if not isinstance(node, dict):
            raise ValueError("malformed blob manifest")
        if "value" in node:
            return node["value"]
        name, shape, nbytes = node.get("dtype"), node.get("shape"), node.get("nbytes")
        if name not in RAW_DTYPES or not isinstance(shape, list) or not isinstance(nbytes, int):
            raise ValueError(f"malformed blob manifest entry {node!r}")
        dtype = getattr(torch, name)
        numel = 1
        for d in shape:
            numel *= int(d)
        if numel * torch.empty((), dtype=dtype).element_size() != nbytes:
            raise ValueError(f"blob manifest entry {node!r}: shape and size disagree")
        buf = torch.empty(nbytes, dtype=torch.uint8)
        if nbytes:
            reader.readinto(memoryview(buf.numpy()))
        return buf.view(dtype).reshape(shape)

    return get(blob.manifest)


def blob_to_tensors(blob: bytes | SpilledBlob) -> list:
    """Load tensors sent by another process without running any of its code."""
    import torch

    if isinstance(blob, SpilledBlob) and blob.manifest is not None:
        return _read_raw(blob)
    return torch.load(io.BytesIO(blob_bytes(blob)), weights_only=True)
