"""Large tensors between the sandbox's processes: chunk files instead of the socket, checked paths,
files removed once used, and only failing checks' tensors shipped to the parent."""
import os
import socket
from multiprocessing.connection import Connection
from pathlib import Path

import pytest
import torch

from debugger.case import case_from_sources
from debugger.evaluate import run_evaluation
from debugger.sandbox import channel, get_sandbox, pool

N = 3_000_001  # float32: 12 MB per tensor, above channel.SPILL_BYTES

REFERENCE = f'''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn({N})]


def get_init_inputs():
    return []
'''

# Wrong only where an input is above 3 (a few hundred elements at scale 1, many at scale 3).
CANDIDATE = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.where(x > 3.0, x, x * 2.0)
'''

CHECKS = [{"name": "seed0", "kind": "seed", "seed": 0},
          {"name": "x0.01", "kind": "distribution", "seed": 10, "transform": "scale:0.01"},
          {"name": "x3", "kind": "distribution", "seed": 11, "transform": "scale:3"}]


def _blob_files(root: Path) -> list[Path]:
    return list(root.glob("*/blobs/blob-*")) if root.exists() else []


def test_large_outputs_travel_as_files_and_only_failing_checks_are_captured(monkeypatch):
    received = []
    recv = channel.recv

    def recording_recv(conn, spill_root=None):
        header, blob = recv(conn, spill_root)
        received.append(type(blob).__name__)
        return header, blob

    monkeypatch.setattr(pool.channel, "recv", recording_recv)
    ev = run_evaluation(case_from_sources(REFERENCE, CANDIDATE), "cpu", checks=CHECKS, capture=True)
    # Three checks, two runs each, and two captures: eight blobs, each a set of files.
    assert received.count("SpilledBlob") == 8
    by_name = {c.name: c for c in ev.report.checks}
    assert by_name["x0.01"].passed and not by_name["seed0"].passed and not by_name["x3"].passed
    assert set(ev.artifacts) == {"seed0", "x3"}
    art = ev.artifacts["x3"]
    ref, run1 = art["reference"][0], art["runs"][0][0]
    assert ref.dtype == torch.float64 and ref.shape == (N,) and run1.shape == (N,)
    x = art["inputs"][0]
    wrong = (run1.double() - ref).abs() > 1e-3
    assert torch.equal(wrong, x > 3.0)  # the shipped tensors are the ones compared
    assert by_name["x3"].outputs[0].n_wrong == int(wrong.sum())
    assert ev.captured_bytes > 4 * N * 4
    assert _blob_files(get_sandbox("cpu").scratch_root) == []


def _pair():
    a, b = socket.socketpair()
    return Connection(a.detach()), Connection(b.detach())


def test_a_blob_file_outside_the_senders_scratch_is_refused(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    outside = tmp_path / "secret"
    outside.write_bytes(b"x" * 10)
    (scratch / "link").symlink_to(outside)
    tx, rx = _pair()
    for paths in ([str(outside)], [str(scratch / "link")], [str(scratch / ".." / "secret")]):
        channel.send(tx, {"ok": True, "blob_files": paths, "blob_size": 10})
        with pytest.raises(ValueError, match="outside the worker's scratch"):
            channel.recv(rx, spill_root=scratch)
    assert outside.exists()


def test_a_spilled_blob_is_chunked_and_deleted_by_its_owner(tmp_path, monkeypatch):
    monkeypatch.setattr(channel, "CHUNK_BYTES", 1000)
    monkeypatch.setattr(channel, "SPILL_BYTES", 100)
    monkeypatch.setattr(channel, "_spill_dir", None)
    channel.spill_to(tmp_path / "blobs")
    data = os.urandom(3500)
    tx, rx = _pair()
    channel.send(tx, {"ok": True}, data)
    header, blob = channel.recv(rx, spill_root=tmp_path)
    assert isinstance(blob, channel.SpilledBlob) and len(blob.paths) == 4 and len(blob) == 3500
    assert channel.blob_bytes(blob) == data
    # Handed on without reading: the next receiver gets the same files and does not own them.
    channel.send(tx, {"op": "compare"}, blob)
    _, passed_on = channel.recv(rx)
    assert passed_on.paths == blob.paths and not passed_on.owner
    del passed_on
    assert all(Path(p).exists() for p in blob.paths)
    paths = blob.paths
    del blob
    assert not any(Path(p).exists() for p in paths)


def test_raw_tensors_round_trip_through_chunk_files(tmp_path, monkeypatch):
    monkeypatch.setattr(channel, "CHUNK_BYTES", 1000)
    monkeypatch.setattr(channel, "SPILL_BYTES", 100)
    monkeypatch.setattr(channel, "_spill_dir", None)
    channel.spill_to(tmp_path / "blobs")
    g = torch.Generator().manual_seed(0)
    tree = [[torch.randn(37, 11, generator=g, dtype=torch.float64), None, 3.5],
            [torch.randn(300, generator=g).to(torch.bfloat16), torch.randint(0, 9, (5, 7), generator=g),
             torch.rand(64, generator=g) > 0.5, torch.tensor(2.0), torch.empty(0, 4)],
            torch.randn(8, 9, generator=g).t()]  # a transposed view arrives with the same values
    tx, rx = _pair()
    channel.send(tx, {"ok": True}, channel.TensorBlob(tree))
    _, blob = channel.recv(rx, spill_root=tmp_path)
    assert blob.manifest is not None and len(blob.paths) > 3
    assert all(Path(p).stat().st_size <= 1000 for p in blob.paths)
    got = channel.blob_to_tensors(blob)
    assert got[0][1] is None and got[0][2] == 3.5
    flat_sent = [tree[0][0], *tree[1], tree[2]]
    flat_got = [got[0][0], *got[1], got[2]]
    for a, b in zip(flat_sent, flat_got):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    # A manifest whose sizes disagree with its shapes is refused, not read past.
    bad = channel.SpilledBlob(blob.paths, blob.size, owner=False,
                              manifest=[{"dtype": "float32", "shape": [10 ** 9], "nbytes": 8}])
    with pytest.raises(ValueError, match="disagree"):
        channel.blob_to_tensors(bad)
    bad.manifest = [{"dtype": "object", "shape": [1], "nbytes": 8}]
    with pytest.raises(ValueError, match="malformed"):
        channel.blob_to_tensors(bad)


def test_small_tensor_blobs_stay_on_the_socket(tmp_path, monkeypatch):
    monkeypatch.setattr(channel, "_spill_dir", None)
    channel.spill_to(tmp_path / "blobs")
    tx, rx = _pair()
    channel.send(tx, {"ok": True}, channel.TensorBlob([torch.arange(10.0), None]))
    _, blob = channel.recv(rx, spill_root=tmp_path)
    assert isinstance(blob, bytes)
    got = channel.blob_to_tensors(blob)
    assert torch.equal(got[0], torch.arange(10.0)) and got[1] is None
    assert list((tmp_path / "blobs").iterdir()) == []
