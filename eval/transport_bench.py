"""Cost of moving one GPU-sized output between sandbox processes, by path:

    python eval/transport_bench.py [--mb 134] [--repeat 3]

socket: torch.save bytes through a socket (the small-blob path, and every blob before chunk files);
raw files: the worker's raw chunk files and manifest (channel.TensorBlob), read back into a tensor.
Prints the median seconds of send and of receive+load for each path, in one process (no GPU involved:
this is the host-side copying a check pays twice per output, once per candidate run).
"""
from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from debugger.sandbox import channel


def _pair():
    a, b = socket.socketpair()
    return Connection(a.detach()), Connection(b.detach())


def measure(x: torch.Tensor, raw: bool, repeat: int) -> tuple[float, float]:
    sends, loads = [], []
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        channel._spill_dir = None
        if raw:
            channel.spill_to(root / "blobs")
        for _ in range(repeat):
            tx, rx = _pair()
            got = {}

            def receive():
                t = time.perf_counter()
                _, blob = channel.recv(rx, spill_root=root)
                got["wait_end"] = time.perf_counter()
                got["tensors"] = channel.blob_to_tensors(blob)
                got["load"] = time.perf_counter() - got["wait_end"]
                got["t0"] = t
                del blob

            reader = threading.Thread(target=receive)
            reader.start()
            t = time.perf_counter()
            channel.send(tx, {"ok": True}, channel.TensorBlob([x]) if raw else channel.tensors_to_blob([x]))
            sent = time.perf_counter()
            reader.join()
            assert torch.equal(got["tensors"][0], x)
            sends.append(sent - t)
            loads.append(got["load"] + max(0.0, got["wait_end"] - sent))
        channel._spill_dir = None
    return statistics.median(sends), statistics.median(loads)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=134.0, help="output size in MB (float32)")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    x = torch.randn(int(a.mb * 1e6 / 4))
    for name, raw in (("socket (torch.save)", False), ("raw chunk files", True)):
        s, l = measure(x, raw, a.repeat)
        print(f"{name:<20} send {s:.3f} s  receive+load {l:.3f} s  total {s + l:.3f} s  ({a.mb:g} MB)")


if __name__ == "__main__":
    main()
