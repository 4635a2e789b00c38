"""Compare two versions of a Triton kernel as compiled for a GPU, on a machine without one:

    python eval/ptx_diff.py A.py B.py --kernel NAME --types 'x_ptr=*fp32,n=i32' --const BLOCK=64 [--arch 90]

Compiles NAME from each file to PTX for sm_ARCH (generating PTX needs no GPU), and prints each
version's PTX line count and 64-bit register count, and how many lines differ once debug information
and parameter numbering are set aside. Arguments not named in --types default to
*fp32 for names ending in _ptr and i32 otherwise. Used to check that a repair compiles to the hand
fix's code (eval/RESULTS.md). Only the kernel's own definition is executed, never the rest of a
candidate's file; a kernel that calls other @jit helpers of its file is not supported.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import importlib.util
import re
import sys
import tempfile
from pathlib import Path


def _kernel(path: str, name: str, folder: Path):
    """The @triton.jit function NAME, loaded from a file that holds only it and the triton imports: the
    rest of the candidate's module (untrusted code) is never run here."""
    source = Path(path).read_text()
    tree = ast.parse(source)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if not defs:
        raise SystemExit(f"ptx_diff: {path} has no top-level function {name}")
    node = defs[0]
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    body = "\n".join(source.splitlines()[start - 1:node.end_lineno])
    only = folder / f"kernel_{abs(hash(path))}.py"
    only.write_text("import triton\nimport triton.language as tl\n\n\n" + body + "\n")
    spec = importlib.util.spec_from_file_location(only.stem, only)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def ptx(path: str, name: str, types: dict, consts: dict, arch: int) -> str:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = _kernel(path, name, Path(tempfile.mkdtemp(prefix="ptx-diff-")))
    sig = {}
    for arg in fn.arg_names:
        if arg in consts:
            sig[arg] = "constexpr"
        else:
            sig[arg] = types.get(arg, "*fp32" if arg.endswith("_ptr") else "i32")
    src = ASTSource(fn=fn, signature=sig,
                    constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()})
    return triton.compile(src, target=GPUTarget("cuda", arch, 32)).asm["ptx"]


def _normalised(text: str) -> list[str]:
    out = []
    for line in text.split("\t.section\t.debug", 1)[0].splitlines():  # DWARF sections name the source file
        line = re.sub(r"//.*", "", line).strip()
        if not line or line.startswith((".loc", ".file")):
            continue
        out.append(re.sub(r"_param_\d+", "_param_N", line))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--kernel", required=True)
    p.add_argument("--types", default="", help="name=type,... (Triton signature types: *fp32, *i64, i32, fp32...)")
    p.add_argument("--const", action="append", default=[], metavar="NAME=INT")
    p.add_argument("--arch", type=int, default=90)
    a = p.parse_args(argv)
    types = dict(kv.split("=", 1) for kv in a.types.split(",") if kv)
    consts = {k: int(v) for k, v in (c.split("=", 1) for c in a.const)}
    texts = {}
    for path in (a.a, a.b):
        if not Path(path).is_file():
            print(f"ptx_diff: no such file: {path}", file=sys.stderr)
            return 2
        texts[path] = ptx(path, a.kernel, types, consts, a.arch)
        regs = re.search(r"\.reg \.b64\s+%rd<(\d+)>", texts[path])
        print(f"{path}: {len(_normalised(texts[path]))} PTX lines, {regs.group(1) if regs else '?'} 64-bit registers")
    diff = [l for l in difflib.unified_diff(_normalised(texts[a.a]), _normalised(texts[a.b]), lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    print(f"lines that differ: {len(diff)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
