"""Numerical check of candidates against a KernelBench reference on Triton's CPU interpreter.

Usage: python _check.py SPEC.json|-  (prints one JSON object on stdout)
SPEC: {"reference": src, "candidates": {name: src}, "seeds": [0, 1], "scale": bool,
       "noncontig": bool, "atol": float, "rtol": float, "timeout": seconds, "clone": bool,
       "first_pass": [names after whose first pass the rest are skipped]}
Result: {name: {"pass": bool, "detail": str}}

torch and triton are imported once; each candidate then runs in a forked child, so a candidate that
corrupts memory (an unmasked out-of-bounds store) fails alone. Fresh allocations are poisoned with NaN
so output elements that no program writes show up as wrong.
"""
import json
import os
import signal
import sys
import tempfile
import traceback

os.environ["TRITON_INTERPRET"] = "1"

import importlib.util  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402,F401

torch.set_num_threads(1)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def poison():
    def wrap(fn):
        def inner(*a, **k):
            t = fn(*a, **k)
            if t.is_floating_point():
                t.fill_(float("nan"))
            return t
        return inner
    torch.empty = wrap(torch.empty)
    torch.empty_like = wrap(torch.empty_like)
    torch.empty_strided = wrap(torch.empty_strided)


def variants(inputs, spec):
    yield "base", inputs
    if spec.get("scale"):
        yield "x100", [t * 100 if torch.is_tensor(t) and t.is_floating_point() else t for t in inputs]
    if spec.get("noncontig"):
        def nc(t):
            if not torch.is_tensor(t) or t.dim() < 2:
                return t
            return t.transpose(-1, -2).contiguous().transpose(-1, -2)
        yield "noncontig", [nc(t) for t in inputs]


def compare(ref, out, atol, rtol):
    if isinstance(ref, (tuple, list)):
        return all(compare(r, o, atol, rtol) for r, o in zip(ref, out))
    if not torch.is_tensor(out) or out.shape != ref.shape or out.dtype != ref.dtype:
        return False
    return bool(torch.allclose(out.float(), ref.float(), atol=atol, rtol=rtol, equal_nan=False))


def run_one(ref_mod, cand_path, spec):
    cand = load(cand_path, "candidate")
    poison()
    for seed in spec.get("seeds", [0, 1]):
        torch.manual_seed(seed)
        inputs = ref_mod.get_inputs()
        init = ref_mod.get_init_inputs() if hasattr(ref_mod, "get_init_inputs") else []
        for label, xs in variants(inputs, spec):
            torch.manual_seed(seed)
            model = ref_mod.Model(*init)
            torch.manual_seed(seed)
            new = cand.ModelNew(*init)
            clone = (lambda x: x.clone() if torch.is_tensor(x) else x) if spec.get("clone", True) \
                else (lambda x: x)
            with torch.no_grad():
                ref = model(*[clone(x) for x in xs])
                out = new(*[clone(x) for x in xs])
            if not compare(ref, out, spec.get("atol", 1e-4), spec.get("rtol", 1e-4)):
                err = (out.float() - ref.float()).abs().max().item() \
                    if torch.is_tensor(out) and torch.is_tensor(ref) and out.shape == ref.shape else "shape"
                return False, f"seed {seed} {label}: max abs err {err} dtype {getattr(out, 'dtype', None)}"
    return True, "ok"


def main():
    spec = json.load(sys.stdin if sys.argv[1] == "-" else open(sys.argv[1]))
    tmp = tempfile.mkdtemp(prefix="recipe_check_")
    ref_path = os.path.join(tmp, "reference.py")
    open(ref_path, "w").write(spec["reference"])
    ref_mod = load(ref_path, "reference")
    results = {}
    for name, src in spec["candidates"].items():
        path = os.path.join(tmp, f"cand_{len(results)}.py")
        open(path, "w").write(src)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            signal.alarm(int(spec.get("timeout", 180)))
            try:
                ok, detail = run_one(ref_mod, path, spec)
            except BaseException as e:  # the candidate's failure is a result
                ok, detail = False, f"{type(e).__name__}: {e}"[:500] + "\n" + traceback.format_exc()[-800:]
            os.write(w, json.dumps({"pass": ok, "detail": detail}).encode())
            os._exit(0)
        os.close(w)
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        raw = b"".join(chunks)
        results[name] = json.loads(raw) if raw else {"pass": False, "detail": f"crashed ({status})"}
        if spec.get("first_pass") and results[name]["pass"] and name in spec["first_pass"]:
            break
    print(json.dumps(results))


if __name__ == "__main__":
    main()
