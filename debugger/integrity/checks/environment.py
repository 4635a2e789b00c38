"""Rules about reaching outside the kernel: the reference, the harness, the interpreter, the OS."""
from __future__ import annotations

from tree_sitter import Node

from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, WARN, Finding, rule
from debugger.integrity.values import Kind
from debugger.source.tree import call_args, enclosing, line, string_value, text, walk

PATCHABLE_ROOTS = {"torch", "time", "triton", "builtins", "numpy", "math", "sys", "os", "gc", "random", "timeit",
                   "functools", "operator", "importlib", "unittest", "pytest", "inspect", "threading", "ctypes"}
REFERENCE_MODULES = {"reference", "ref", "problem", "kernelbench", "ref_model", "reference_model", "model"}
INTROSPECTION_MODULES = {"inspect", "gc", "ctypes", "_ctypes", "tracemalloc", "dis"}
INTROSPECTION_ATTRIBUTES = {"_getframe", "_current_frames", "modules", "f_back", "f_locals", "f_globals", "f_code",
                            "__globals__", "__closure__", "__code__", "gi_frame", "tb_frame", "__dict__",
                            "__subclasses__", "__builtins__"}
NETWORK_AND_FILE_MODULES = {"socket", "urllib", "requests", "http", "httpx", "aiohttp", "ftplib", "smtplib",
                            "pickle", "shelve", "dill", "joblib", "shutil", "tempfile", "sqlite3", "glob"}
FILE_CALLS = {"torch.load", "torch.save", "numpy.load", "numpy.save", "numpy.savez", "numpy.fromfile",
              "numpy.loadtxt", "numpy.savetxt", "os.remove", "os.unlink", "os.rename", "os.replace", "os.listdir",
              "os.scandir", "os.walk", "os.makedirs", "os.mkdir", "os.open", "io.open", "builtins.open"}
PATH_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes", "unlink", "touch", "mkdir"}
CONCURRENCY_MODULES = {"threading", "_thread", "multiprocessing", "concurrent", "asyncio", "subprocess",
                       "torch.multiprocessing", "sched"}
PROCESS_CALLS = {"os.fork", "os.system", "os.popen", "os.spawnl", "os.spawnv", "os.execv", "os.execl",
                 "os.posix_spawn", "os.forkpty"}
STREAM_CALLS = {"torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.cuda.set_stream",
                "torch.cuda.graph", "torch.cuda.CUDAGraph", "torch.Stream", "torch.cuda.streams.Stream",
                "torch.cuda.graphs.CUDAGraph", "torch.cuda.graphs.graph"}
STREAM_STRINGS = ("cudaStreamCreate", "cudaStreamNonBlocking", "cudaGraphLaunch", "cudaStreamBeginCapture",
                  "cublasSetStream")
SUBCLASS_BASES = {"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase", "torch.nn.Parameter"}
SUBCLASS_MARKERS = {"__torch_function__", "__torch_dispatch__", "_make_subclass", "_make_wrapper_subclass"}
DISPATCH_MODULES = ("torch.overrides", "torch.utils._python_dispatch", "torch._subclasses", "torch.library")
HARMLESS_TORCH_SETTERS = {"torch.set_grad_enabled", "torch.set_printoptions"}
VENDOR_MODULES = {"flash_attn", "xformers", "apex", "cupy", "jax", "jaxlib", "tensorflow", "numba", "scipy",
                  "transformer_engine", "torch_tensorrt", "tensorrt", "onnxruntime", "deepspeed", "bitsandbytes",
                  "liger_kernel", "vllm", "sgl_kernel", "flashinfer", "cutlass", "cuda", "pycuda", "thunderkittens"}
HOOK_METHODS = {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
                "register_module_forward_hook", "register_module_forward_pre_hook"}


def _modules_named(ctx: Context, names: set[str]) -> list[tuple[str, Node]]:
    return [(module, node) for module, node in ctx.candidate.imported_modules
            if module in names or module.split(".")[0] in names]


def _root_module(ctx: Context, node: Node) -> str:
    """The imported module an attribute chain starts from ('' when it starts elsewhere)."""
    while node.type == "attribute":
        node = node.child_by_field_name("object")
    return ctx.resolve(node).split(".")[0] if node.type == "identifier" else ""


def _builtin_call(ctx: Context, node: Node, names: set[str]) -> str | None:
    """The name of a call to one of the builtins `names` that the file does not shadow."""
    callee = node.child_by_field_name("function")
    if callee is not None and callee.type == "identifier" and text(callee) in names \
            and text(callee) not in ctx.candidate.defined_names:
        return text(callee)
    return None


@rule("reference_model", REJECT,
      rationale="Importing, subclassing or calling the reference Model hands the operator back to PyTorch "
                "(KernelBench's `class ModelNew(Model): pass`).")
def reference_model(ctx: Context) -> list[Finding]:
    found = []
    for module, node in ctx.candidate.imported_modules:
        parts = set(module.lower().split("."))
        if parts & REFERENCE_MODULES or module.split(".")[-1] in ctx.reference_classes:
            if not module.startswith(("torch", "triton")):
                found.append(Finding("reference_model", REJECT, f"imports {module}", line(node)))
    if "ModelNew" in ctx.candidate.classes:
        model_new = ctx.candidate.classes["ModelNew"]
        for base in _base_chain(ctx, "ModelNew"):
            if text(base).split(".")[-1] in ctx.reference_classes:
                found.append(Finding("reference_model", REJECT, f"ModelNew derives from {text(base)}", line(base)))
        scopes = [model_new] + [fn.node for fn in ctx.forward_path]
        for scope in scopes:
            for node in walk(scope):
                if node.type == "identifier" and text(node) in ctx.reference_classes \
                        and not _is_definition_name(node):
                    found.append(Finding("reference_model", REJECT, f"uses the reference class {text(node)}",
                                         line(node)))
                elif node.type == "call" and text(node.child_by_field_name("function")) == "super" \
                        and node.parent is not None and node.parent.type == "attribute" \
                        and text(node.parent.child_by_field_name("attribute")) == "forward":
                    found.append(Finding("reference_model", REJECT, "calls super().forward", line(node)))
    return _unique(found)


def _base_chain(ctx: Context, cls: str) -> list[Node]:
    bases, seen, todo = [], set(), [cls]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for base in ctx.candidate.superclasses(current):
            bases.append(base)
            if text(base) in ctx.candidate.classes:
                todo.append(text(base))
    return bases


def _is_definition_name(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "class_definition" and parent.child_by_field_name("name") == node


@rule("monkeypatch", REJECT,
      rationale="Rebinding attributes of torch, triton, time or builtins changes what the harness measures and "
                "compares (patched allclose, synchronize, timers).")
def monkeypatch(ctx: Context) -> list[Finding]:
    found = []
    for node in ctx.file_nodes("assignment", "augmented_assignment", "delete_statement"):
        targets = [node.child_by_field_name("left")] if node.type != "delete_statement" else node.named_children
        for target in targets:
            if target is None:
                continue
            for item in (target.named_children if target.type in ("pattern_list", "tuple_pattern", "expression_list")
                         else [target]):
                if item.type == "subscript":  # os.environ["X"] = ... is configuration, not patching
                    item = item.child_by_field_name("value")
                    if text(item) != "__builtins__":
                        continue
                if item.type != "attribute" and text(item) != "__builtins__":
                    continue
                root = _root_module(ctx, item) if item.type == "attribute" else "builtins"
                if root in PATCHABLE_ROOTS and not ctx.resolve(item).startswith("torch.backends."):
                    found.append(Finding("monkeypatch", REJECT, f"rebinds {text(item)}", line(node)))
    for node in ctx.file_nodes("call"):
        name = _builtin_call(ctx, node, {"setattr", "delattr"})
        positional, _ = call_args(node)
        if name and positional:
            target = positional[0]
            root = _root_module(ctx, target) if target.type in ("attribute", "identifier") else ""
            if root in PATCHABLE_ROOTS or text(target) in ("__builtins__",):
                found.append(Finding("monkeypatch", REJECT, f"{name} on {text(target)}", line(node)))
    return found


@rule("global_flags", REJECT,
      rationale="Setting torch.backends flags or torch.set_* changes the numerics of the reference and of the "
                "harness too (TF32 switched on, default dtype changed).")
def global_flags(ctx: Context) -> list[Finding]:
    found = []
    for node in ctx.file_nodes("assignment", "augmented_assignment"):
        left = node.child_by_field_name("left")
        if left is not None and left.type == "attribute" and ctx.resolve(left).startswith(("torch.backends.",
                                                                                          "torch._C.", "torch._dynamo.")):
            found.append(Finding("global_flags", REJECT, f"sets {text(left)}", line(node)))
    for node in ctx.file_nodes("call"):
        name = ctx.resolve(node.child_by_field_name("function"))
        if (name.startswith(("torch.set_", "torch._C._set", "torch.use_deterministic_algorithms"))
                or (name.startswith("torch.backends.") and name.endswith((".flags", "set_flags")))) \
                and name not in HARMLESS_TORCH_SETTERS:
            found.append(Finding("global_flags", REJECT, f"calls {name}", line(node)))
    return found


@rule("introspection", REJECT,
      rationale="Frames, globals, the garbage collector and ctypes let a candidate find the reference's output "
                "or the harness's state instead of computing (stack tracing, gc scans).")
def introspection(ctx: Context) -> list[Finding]:
    found = [Finding("introspection", REJECT, f"imports {module}", line(node))
             for module, node in _modules_named(ctx, INTROSPECTION_MODULES)]
    found += [Finding("introspection", WARN, "imports traceback", line(node))
              for _, node in _modules_named(ctx, {"traceback"})]
    for node in ctx.file_nodes("call"):
        name = _builtin_call(ctx, node, {"globals", "locals", "vars"})
        if name:
            found.append(Finding("introspection", REJECT, f"calls {name}()", line(node)))
    for node in ctx.file_nodes("attribute"):
        attr = text(node.child_by_field_name("attribute"))
        if attr == "__dict__" and text(node.child_by_field_name("object")) == "self":
            continue  # the module's own attributes (nn.Module's extra_repr idiom), not the harness's state
        if attr in INTROSPECTION_ATTRIBUTES and (attr != "modules" or ctx.resolve(node) == "sys.modules"):
            found.append(Finding("introspection", REJECT, f"reads {text(node)}", line(node)))
    for node in ctx.file_nodes("identifier"):
        if text(node) == "__builtins__":
            found.append(Finding("introspection", REJECT, "reads __builtins__", line(node)))
    return _unique(found)


_REGISTERING = {"add_module", "register_module", "register_parameter", "register_buffer"}


def _name_template(node: Node | None) -> str | None:
    """A string literal or f-string with each interpolation written `{}` (`f"layer_{i}_ih"` -> "layer_{}_ih")."""
    if node is None or node.type != "string":
        return None
    parts = []
    for c in node.children:
        if c.type == "string_content":
            parts.append(text(c))
        elif c.type == "interpolation":
            parts.append("{}")
    return "".join(parts)


def _registered_names(ctx: Context) -> set[str]:
    """The name templates the file registers on its modules: `m.add_module(NAME, ...)` (and register_module,
    register_parameter, register_buffer) or `setattr(m, NAME, ...)`, NAME a literal or an f-string."""
    names = set()
    for node in ctx.file_nodes("call"):
        callee = node.child_by_field_name("function")
        positional, _ = call_args(node)
        if callee.type == "attribute" and text(callee.child_by_field_name("attribute")) in _REGISTERING and positional:
            names.add(_name_template(positional[0]))
        elif _builtin_call(ctx, node, {"setattr"}) and len(positional) >= 2:
            names.add(_name_template(positional[1]))
    names.discard(None)
    return {n for n in names if n.strip("{}")}  # a bare f"{name}" says nothing of which names


@rule("obfuscated_call", REJECT,
      rationale="eval/exec, dynamic imports and getattr with computed names hide which function runs, so no "
                "static rule can see it.")
def obfuscated_call(ctx: Context) -> list[Finding]:
    registered = _registered_names(ctx)
    found = [Finding("obfuscated_call", REJECT, f"imports {module}", line(node))
             for module, node in _modules_named(ctx, {"importlib", "runpy", "code", "codeop"})]
    for node in ctx.file_nodes("call"):
        name = _builtin_call(ctx, node, {"eval", "exec", "compile", "__import__"})
        if name:
            found.append(Finding("obfuscated_call", REJECT, f"calls {name}()", line(node)))
            continue
        if _builtin_call(ctx, node, {"getattr"}):
            positional, _ = call_args(node)
            if len(positional) >= 2 and string_value(positional[1]) is None:
                owner = positional[0]
                if not ctx.resolve(owner) and _name_template(positional[1]) in registered:
                    continue  # one of the names the candidate's own modules registered (`add_module(f"layer_{i}", ...)`)
                if ctx.resolve(owner) or ctx.kind(owner).is_tensor:
                    found.append(Finding("obfuscated_call", REJECT,
                                         f"getattr({text(owner)}, {ctx.source(positional[1])}) with a computed name",
                                         line(node)))
    for node in ctx.file_nodes("attribute"):
        if ctx.resolve(node) in ("operator.attrgetter", "operator.methodcaller"):
            found.append(Finding("obfuscated_call", REJECT, f"uses {text(node)}", line(node)))
    return found


@rule("file_or_network", REJECT,
      rationale="Reading files or the network can fetch precomputed outputs; writing can tamper with the "
                "harness or its caches.")
def file_or_network(ctx: Context) -> list[Finding]:
    found = [Finding("file_or_network", REJECT, f"imports {module}", line(node))
             for module, node in _modules_named(ctx, NETWORK_AND_FILE_MODULES)]
    for node in ctx.file_nodes("call"):
        callee = node.child_by_field_name("function")
        name = ctx.resolve(callee)
        if _builtin_call(ctx, node, {"open"}) or name in FILE_CALLS:
            found.append(Finding("file_or_network", REJECT, f"calls {name or 'open'}()", line(node)))
        elif callee.type == "attribute" and text(callee.child_by_field_name("attribute")) in PATH_METHODS \
                and ("pathlib" in ctx.candidate.src or "Path(" in text(callee)):
            found.append(Finding("file_or_network", REJECT, f"calls {text(callee)}()", line(node)))
    return found


@rule("thread_or_process", REJECT,
      rationale="Work done on another thread or process escapes both timing and the launch hooks (DR's thread "
                "injection).")
def thread_or_process(ctx: Context) -> list[Finding]:
    found = [Finding("thread_or_process", REJECT, f"imports {module}", line(node))
             for module, node in ctx.candidate.imported_modules
             if module in CONCURRENCY_MODULES or module.split(".")[0] in CONCURRENCY_MODULES - {"torch.multiprocessing"}
             or module.startswith("torch.multiprocessing")]
    for node in ctx.file_nodes("call"):
        name = ctx.resolve(node.child_by_field_name("function"))
        if name in PROCESS_CALLS:
            found.append(Finding("thread_or_process", REJECT, f"calls {name}", line(node)))
    return _unique(found)


@rule("side_stream", REJECT,
      rationale="Kernels on a side stream or replayed from a captured graph finish outside the timed region "
                "and can read stale pointers.")
def side_stream(ctx: Context) -> list[Finding]:
    found = []
    for node in ctx.file_nodes("call"):
        callee = node.child_by_field_name("function")
        name = ctx.resolve(callee)
        method = text(callee.child_by_field_name("attribute")) if callee.type == "attribute" else ""
        if name in STREAM_CALLS or method in ("wait_stream", "record_stream") or name.startswith("torch.cuda.graphs"):
            found.append(Finding("side_stream", REJECT, f"calls {name or text(callee)}", line(node)))
    for node in ctx.file_nodes("string"):
        value = string_value(node) or ""
        for marker in STREAM_STRINGS:
            if marker in value:
                found.append(Finding("side_stream", REJECT, f"extension source uses {marker}", line(node)))
                break
    return found


@rule("tensor_subclass", REJECT,
      rationale="Tensor subclasses and dispatch modes can return lazy objects that compute (or compare) only "
                "when the harness looks at them.")
def tensor_subclass(ctx: Context) -> list[Finding]:
    found = []
    for cls in ctx.candidate.classes:
        for base in ctx.candidate.superclasses(cls):
            if ctx.resolve(base) in SUBCLASS_BASES or ctx.resolve(base).startswith(DISPATCH_MODULES):
                found.append(Finding("tensor_subclass", REJECT, f"class {cls} derives from {text(base)}",
                                     line(base)))
    for node in ctx.file_nodes("identifier"):
        if text(node) in SUBCLASS_MARKERS:
            found.append(Finding("tensor_subclass", REJECT, f"uses {text(node)}", line(node)))
    for node in ctx.file_nodes("attribute"):
        if ctx.resolve(node).startswith(DISPATCH_MODULES) and (node.parent is None or node.parent.type != "attribute"):
            if not ctx.resolve(node).startswith(("torch.library.triton_op", "torch.library.wrap_triton",
                                                 "torch.library.custom_op")):
                found.append(Finding("tensor_subclass", REJECT, f"uses {text(node)}", line(node)))
    return _unique(found)


@rule("cpu_roundtrip", REJECT,
      rationale="Moving the data to the host (or numpy) in forward computes there, not in the kernel; reading "
                "one scalar with .item() is only reported.")
def cpu_roundtrip(ctx: Context) -> list[Finding]:
    found = []
    for fn, node in ctx.forward_nodes("call"):
        callee = node.child_by_field_name("function")
        name = ctx.resolve(callee)
        positional, keywords = call_args(node)
        if name == "torch.from_numpy" or (name.startswith("numpy.") and any(
                ctx.kinds.kind(a, fn).is_tensor for a in [*positional, *keywords.values()])):
            found.append(Finding("cpu_roundtrip", REJECT, f"calls {name} on tensor data in the forward path",
                                 line(node)))
            continue
        if callee.type != "attribute" or name:
            continue
        method = text(callee.child_by_field_name("attribute"))
        receiver = callee.child_by_field_name("object")
        if text(receiver) == "self":
            continue
        receiver_kind = ctx.kinds.kind(receiver, fn)
        to_cpu = method == "to" and any("cpu" in text(a) for a in [*positional, *keywords.values()])
        if method in ("cpu", "numpy") or to_cpu:
            found.append(Finding("cpu_roundtrip", REJECT, f"{ctx.source(node)} moves data to the host", line(node)))
        elif method == "tolist" and receiver_kind != Kind.META:
            severity = REJECT if receiver_kind.is_full_size else WARN
            found.append(Finding("cpu_roundtrip", severity, f"{ctx.source(node)} copies a tensor to a list",
                                 line(node)))
        elif method == "item":
            in_loop = enclosing(node, "for_statement", "while_statement", "list_comprehension",
                                "generator_expression", "set_comprehension", "dictionary_comprehension")
            looping = in_loop is not None and fn.node.start_byte <= in_loop.start_byte
            found.append(Finding("cpu_roundtrip", REJECT if looping else WARN,
                                 f"{ctx.source(node)} reads {'elements one by one' if looping else 'a scalar'} "
                                 "to the host", line(node)))
    return found


@rule("vendor_library", REJECT,
      rationale="Kernels from other libraries (flash-attn, xformers, apex, cupy, numba, ...) are not the "
                "candidate's own Triton or load_inline code.")
def vendor_library(ctx: Context) -> list[Finding]:
    return _unique([Finding("vendor_library", REJECT, f"imports {module}", line(node))
                    for module, node in _modules_named(ctx, VENDOR_MODULES)])


@rule("forward_override", REJECT,
      rationale="Hooks, a replaced forward or __call__ change what calling the module returns, out of sight "
                "of the forward the rules read.")
def forward_override(ctx: Context) -> list[Finding]:
    found = []
    for node in ctx.file_nodes("call"):
        callee = node.child_by_field_name("function")
        method = text(callee.child_by_field_name("attribute")) if callee.type == "attribute" else text(callee)
        if method in HOOK_METHODS or ctx.resolve(callee).split(".")[-1] in HOOK_METHODS:
            found.append(Finding("forward_override", REJECT, f"registers a hook with {text(callee)}", line(node)))
    for node in ctx.file_nodes("assignment"):
        left = node.child_by_field_name("left")
        if left is not None and left.type == "attribute" \
                and text(left.child_by_field_name("attribute")) in ("forward", "__call__", "_call_impl"):
            found.append(Finding("forward_override", REJECT, f"replaces {text(left)}", line(node)))
    for method in ("__call__", "_call_impl"):
        overridden = ctx.candidate.method("ModelNew", method) if "ModelNew" in ctx.candidate.classes else None
        if overridden is not None:
            found.append(Finding("forward_override", REJECT, f"ModelNew defines {method}, bypassing forward",
                                 line(overridden.node)))
    return found


def _unique(findings: list[Finding]) -> list[Finding]:
    seen, unique = set(), []
    for finding in findings:
        key = (finding.line, finding.message)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique


RULES = [reference_model, monkeypatch, global_flags, introspection, obfuscated_call, file_or_network,
         thread_or_process, side_stream, tensor_subclass, cpu_roundtrip, vendor_library, forward_override]
