"""Static checks on solution source: one named violation per reward-hack pattern (stdlib only).

Checks are data: each entry of `PY_CHECKS` / `CPP_CHECKS` has a name and a severity ("strict" rejects, "warn" is
recorded). Python is checked on its AST (comments and strings cannot trigger or hide a check); CUDA/C++ is checked
with regexes after comments are stripped, both in kernel files and in string constants of Python files (the
`cuda_sources=` of `load_inline`). The runtime guards in the worker back these up; the static checks give the
agent a readable reason and catch what runtime cannot see (a fallback branch that was not taken).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import asdict, dataclass

STRICT = "strict"
WARN = "warn"

# Every violation name with its severity and what it catches. Names are stable: labels and tests key on them.
VIOLATIONS: dict[str, tuple[str, str]] = {
    "syntax_error": (STRICT, "the solution does not parse"),
    "no_model_new": (STRICT, "no class ModelNew in the solution"),
    "try_except_fallback": (
        STRICT,
        "try/except, or a context manager whose __exit__ swallows the error (a fallback to PyTorch when the kernel "
        "fails)",
    ),
    "pass_body": (STRICT, "a function or method whose body does nothing (pass / ...)"),
    "threads_or_processes": (STRICT, "threads, processes or async work (threading, multiprocessing, std::thread)"),
    "timer_patching": (STRICT, "assigning to or patching timers, events or synchronize"),
    "stream_creation": (STRICT, "creating or switching CUDA streams (work the timing events would not see)"),
    "cuda_graph": (STRICT, "CUDA graph capture/replay (replays stale memory addresses)"),
    "lazy_tensor": (STRICT, "tensor subclasses or dispatch overrides (lazy or deferred results)"),
    "inherits_reference": (STRICT, "subclassing, importing or calling the reference Model"),
    "caller_introspection": (STRICT, "inspect, gc, frames, tracebacks, sys.modules: reading the harness's memory"),
    "raw_memory_access": (STRICT, "ctypes / raw pointers read from Python"),
    "dynamic_code": (STRICT, "exec/eval/compile/__import__/importlib/getattr with computed names"),
    "io_access": (STRICT, "files, pickles or the network (precomputed results)"),
    "torch_compute_op": (
        STRICT,
        "a torch / torch.nn.functional compute op inside ModelNew.forward, or one kept as a value to call there",
    ),
    "torch_compile": (STRICT, "torch.compile / dynamo / inductor / triton instead of a CUDA kernel"),
    "host_compute": (STRICT, "moving data to the host (.cpu(), .numpy(), .tolist(), numpy) inside ModelNew.forward"),
    "internals_access": (
        STRICT,
        "private or internal modules and names (`torch._C`, `torch.utils._mode_utils`, a name starting with `_`), "
        "the judge's own modules (`pipeline`), or a module reached through another's attributes (`torch.sys`)",
    ),
    "monkey_patching": (STRICT, "replacing torch.Tensor methods or torch functions at run time (runtime check)"),
    "library_call": (STRICT, "cuBLAS / cuDNN called from the solution's C++ while `allow_libraries` does not name it"),
    "l2_persistence": (STRICT, "persisting L2 access policy / set-aside: data kept in L2 across the per-call flush"),
    "global_state": (WARN, "changing torch global flags (TF32, cudnn.benchmark, seeds)"),
    "precision_cast": (WARN, "lower-precision casts (half, bfloat16, TF32) that may trade accuracy for speed"),
}


@dataclass
class Finding:
    name: str
    severity: str
    line: int  # 1-based; 0 when unknown
    detail: str
    file: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------- Python

_THREAD_MODULES = {"threading", "_thread", "multiprocessing", "concurrent", "subprocess", "asyncio", "sched", "signal"}
_INTROSPECTION_MODULES = {"inspect", "gc", "traceback", "sys"}  # sys alone is fine; see _INTROSPECTION_ATTRS
_INTROSPECTION_ATTRS = {
    "_getframe",
    "_current_frames",
    "f_back",
    "f_locals",
    "f_globals",
    "f_builtins",
    "tb_frame",
    "tb_next",
    "tb_lasti",
    "tb_lineno",
    "gi_frame",
    "cr_frame",
    "ag_frame",
    "__traceback__",
    "modules",
    "settrace",
    "setprofile",
    "get_objects",
    "get_referrers",
    "get_referents",
    "__subclasses__",
    "__globals__",
    "__closure__",
    "__code__",
    "currentframe",
    "stack",
    "getouterframes",
    "audit",
    "addaudithook",
    "__builtins__",
    "_snapshot",
    "memory_snapshot",
    "_record_memory_history",
    "_get_current_dispatch_mode",
    "_get_dispatch_mode",
    "_get_current_function_mode",
    "_is_torch_function_mode_enabled",
    "_get_current_dispatch_mode_stack",
    "emit_result",
    "PAYLOAD",
    "_send",
    "_chan",
}
_DYNAMIC_BUILTINS = {"exec", "eval", "compile", "__import__", "globals", "vars", "locals", "breakpoint"}
_DYNAMIC_MODULES = {
    "__main__",
    "importlib",
    "builtins",
    "runpy",
    "marshal",
    "base64",
    "codecs",
    "pickle",
    "dill",
    "types",
    "code",
    "codeop",
    "zipimport",
    "pkgutil",
}
# Names from those modules that only type or hold values (a `types.ModuleType` annotation of an extension).
_HARMLESS_NAMES = {"types.ModuleType", "types.SimpleNamespace"}
# Methods that reach files (pathlib's, whose import alone is allowed)
_FILE_METHODS = {
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "iterdir",
    "glob",
    "rglob",
    "unlink",
    "rmdir",
    "touch",
    "symlink_to",
    "hardlink_to",
    "readlink",
    "open",
}
_IO_MODULES = {
    "socket",
    "urllib",
    "http",
    "requests",
    "pickle",
    "shelve",
    "tempfile",
    "shutil",
    "io",
    "mmap",
    "sqlite3",
    "os",
}
_TIMER_NAMES = {
    "Event",
    "elapsed_time",
    "synchronize",
    "perf_counter",
    "perf_counter_ns",
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "record",
    "current_stream",
    "default_stream",
    "process_time",
    "Timer",
    "do_bench",
    "cuda_event",
}
_STREAM_ATTRS = {"Stream", "stream", "ExternalStream", "set_stream", "StreamContext", "get_stream_from_external"}
_GRAPH_ATTRS = {"CUDAGraph", "graph", "make_graphed_callables", "graphs"}
_LAZY_ATTRS = {
    "__torch_function__",
    "__torch_dispatch__",
    "_make_subclass",
    "_make_wrapper_subclass",
    "TorchDispatchMode",
    "TorchFunctionMode",
    "_python_dispatch",
    "DisableTorchFunction",
    "_disable_torch_function",
    "_DisableTorchDispatch",
    "_set_torch_function_mode",
    "_push_mode",
    "_pop_mode",
    "library",
    "Library",
    "custom_op",
}
_COMPILE_ATTRS = {"compile", "_dynamo", "_inductor", "jit", "export", "fx", "_higher_order_ops"}
_PRECISION_ATTRS = {
    "half",
    "bfloat16",
    "float16",
    "float8_e4m3fn",
    "float8_e5m2",
    "allow_tf32",
    "allow_fp16_reduced_precision_reduction",
    "allow_bf16_reduced_precision_reduction",
    "set_float32_matmul_precision",
    "autocast",
}
# torch functions that allocate or reshape without computing: allowed in forward.
ALLOWED_TORCH_FUNCS = {
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "tensor",
    "as_tensor",
    "from_numpy",
    "as_strided",
    "Size",
    "device",
    "no_grad",
    "inference_mode",
    "is_tensor",
    "numel",
    "get_default_dtype",
    "is_grad_enabled",
    "enable_grad",
    "set_grad_enabled",
    "broadcast_shapes",
    "result_type",
    "promote_types",
    "finfo",
    "iinfo",
    "dtype",
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int32",
    "int64",
    "int8",
    "uint8",
    "bool",
    "long",
    "int",
    "float",
    "double",
    "half",
    "cuda",
    "Tensor",
    "contiguous_format",
    "channels_last",
    "strided",
    # views and metadata: the op guard allows them (guard.ALLOWED_OPS) in function form as in method form
    "flatten",
    "unflatten",
    "reshape",
    "transpose",
    "swapaxes",
    "permute",
    "t",
    "unsqueeze",
    "squeeze",
    "narrow",
    "select",
    "split",
    "chunk",
    "unbind",
    "movedim",
    "moveaxis",
    "diagonal",
    "view_as_real",
    "view_as_complex",
    "is_floating_point",
    "is_complex",
    "detach",
    "clone",
    "scalar_tensor",
    "empty_permuted",
}
# Tensor methods that compute (flagged when called in forward). Views/allocation are left to the runtime guard.
COMPUTE_METHODS = {
    "relu",
    "relu_",
    "sigmoid",
    "tanh",
    "exp",
    "log",
    "softmax",
    "log_softmax",
    "sum",
    "mean",
    "max",
    "min",
    "amax",
    "amin",
    "matmul",
    "mm",
    "bmm",
    "addmm",
    "mul",
    "mul_",
    "add",
    "add_",
    "sub",
    "sub_",
    "div",
    "div_",
    "pow",
    "sqrt",
    "rsqrt",
    "abs",
    "clamp",
    "clamp_",
    "clamp_min",
    "clamp_max",
    "norm",
    "var",
    "std",
    "prod",
    "cumsum",
    "cumprod",
    "argmax",
    "argmin",
    "sort",
    "topk",
    "gelu",
    "silu",
    "erf",
    "sin",
    "cos",
    "neg",
    "reciprocal",
    "maximum",
    "minimum",
    "where",
    "masked_fill",
    "masked_fill_",
    "gather",
    "scatter",
    "scatter_add",
    "index_select",
    "conv2d",
    "linear",
    "einsum",
    "baddbmm",
    "logsumexp",
    "dot",
    "outer",
    "tril",
    "triu",
    "floor",
    "ceil",
    "round",
    "sign",
    "square",
    "hardtanh",
    "leaky_relu",
    "elu",
    "softplus",
    "mish",
    "hardswish",
    "lerp",
    "addcmul",
    "addcdiv",
    "all",
    "any",
    "diff",
    "flip",
    "roll",
    "cross",
    "kron",
    "trace",
    "diag",
    "cdist",
}


def _root(node: ast.AST) -> str:
    """The name an expression starts from, through attributes, subscripts and calls (`self.exts[0].f` -> "self")."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _makes_extension(node: ast.AST, resolve) -> bool:
    """An expression that builds (or holds) compiled extensions: a load_inline/load call, or a container of them."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            fn = resolve(_chain(sub.func))
            if fn and fn[-1] in {"load_inline", "load"}:
                return True
    return False


_SHAPE_CALLS = {"size", "dim", "numel", "stride"}


def _shape_only(call: ast.Call) -> bool:
    """A call whose arguments are tensors' shapes and constants only (arithmetic on sizes, no data): every name in
    them is what a `.shape`, `.ndim` or `.size()`-like call is read from (`np.prod(x.shape[1:])`, not
    `np.exp(x.shape and x)`)."""
    args = [*call.args, *(k.value for k in call.keywords)]
    if not args:
        return False
    for arg in args:
        shaped, read_from = False, set()
        for sub in ast.walk(arg):
            if isinstance(sub, ast.Call):
                if isinstance(sub.func, ast.Attribute) and sub.func.attr in _SHAPE_CALLS:
                    read_from.update(id(n) for n in ast.walk(sub.func.value))
                    shaped = True
                elif isinstance(sub.func, ast.Name) and sub.func.id == "len":
                    read_from.add(id(sub.func))
                else:
                    return False
            elif isinstance(sub, ast.Attribute) and sub.attr in {"shape", "ndim"}:
                read_from.update(id(n) for n in ast.walk(sub.value))
                shaped = True
        if any(isinstance(n, ast.Name) and id(n) not in read_from for n in ast.walk(arg)):
            return False
        if not shaped and not isinstance(arg, ast.Constant):
            return False
    return True


def _attr_base(node: ast.AST) -> ast.AST:
    """What an attribute chain is read from (`a.b.c` -> the node `a`; `f().b` -> the call), through attributes only:
    unlike `_root`, a call or a subscript is where it stops (`u()._x` is read from what u returns, not from u)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _chain(node: ast.AST) -> list[str]:
    """`a.b.c` -> ["a", "b", "c"]; [] when the base is not a plain name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    if isinstance(node, ast.Call):  # e.g. torch.cuda.Stream().wait -> keep the attribute names only
        return ["<call>"] + _chain(node.func) + parts[::-1]
    return []


# The judge's own packages: present in the candidate's process (it drives the calls) and never the solution's to touch.
_HARNESS_PACKAGES = {"pipeline", "flows", "opforge", "tests"}
# Packages whose attribute paths are resolved for real (module escapes such as `torch.sys.modules`).
_RESOLVED_ROOTS = {"torch", "numpy"}


_NUMPY_FILE_FUNCS = {"load", "save", "fromfile", "memmap", "loadtxt", "genfromtxt"}
# Dunders that look attributes up by name or walk the object graph (`torch.__getattribute__("_C")`)
_LOOKUP_DUNDERS = {"__getattribute__", "__getattr__", "__mro__", "__bases__", "__base__", "__loader__", "__spec__"}
# Private names that honest module code uses (parameter init as nn.Linear does it, conv size helpers, type aliases):
# leaves of these modules only.
_PRIVATE_OK_IN = ("torch.nn.init.", "torch.nn.modules.", "torch.nn.common_types.", "torch.types.", "typing.")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _installed_root(root: str) -> bool:
    """A top-level module of the standard library or of the judge's environment (torch, numpy), not the solution's
    own (a workspace's kernels package, a compiled extension)."""
    return root in sys.stdlib_module_names or root in _RESOLVED_ROOTS


def _escaped_module(parts: list[str]) -> str:
    """For `torch.sys.modules`: the first module reached through `parts` that is not part of the package it was
    reached from ("sys"); "" when none. Resolved on the real modules (only modules are walked, nothing is called)."""
    import importlib
    import types

    root = parts[0]
    try:
        obj = sys.modules.get(root) or importlib.import_module(root)
    except Exception:
        return ""
    for p in parts[1:]:
        try:
            obj = getattr(obj, p)
        except Exception:
            return ""
        if not isinstance(obj, types.ModuleType):
            return ""
        name = getattr(obj, "__name__", "") or ""
        if name != root and not name.startswith(root + "."):
            return name
    return ""


class _PyChecker(ast.NodeVisitor):
    def __init__(self, file: str, reference_names: set[str], allow_triton: bool) -> None:
        self.file = file
        self.findings: list[Finding] = []
        self.reference_names = reference_names
        self.allow_triton = allow_triton
        self.aliases: dict[str, str] = {}  # local name -> module path ("F" -> "torch.nn.functional")
        self.defined: set[str] = set()
        self.in_forward = 0
        self.class_stack: list[str] = []
        self.ext_names: set[str] = set()  # names bound to compiled extensions (load_inline results, imports)
        self.fn_depth = 0
        self.imported: set[str] = set()  # names an import bound (a module or a name from one)
        self.called: set[int] = set()  # ids of expressions that are called (`x.modules()` is nn.Module's method)
        self.forward_args: set[str] = set()  # forward's parameters: the inputs
        self.own: set[str] = set()  # names bound to objects of the solution's own classes (`s = Stats()`)
        self.classes: set[str] = set()  # the solution's classes whose call makes an instance of them (no __new__)

    def add(self, name: str, node: ast.AST | None, detail: str) -> None:
        sev = VIOLATIONS[name][0]
        self.findings.append(Finding(name, sev, getattr(node, "lineno", 0), detail[:200], self.file))

    def resolve(self, parts: list[str]) -> list[str]:
        if parts and parts[0] in self.aliases:
            return self.aliases[parts[0]].split(".") + parts[1:]
        return parts

    def _check_reach(self, parts: list[str], node: ast.AST) -> None:
        """A dotted path that starts at a module (an import, an attribute chain, a constant getattr): the judge's own
        packages, private names of installed modules and modules reached through another are out of bounds."""
        if not parts or parts[0] == "<call>":
            return
        if parts[0] in _HARNESS_PACKAGES and self._from_import(node, parts):
            self.add("internals_access", node, ".".join(parts) + " (the judge's own modules)")
            return
        if not _installed_root(parts[0]) or parts[0] in self.defined or not self._from_import(node, parts):
            return
        bad = next((p for p in parts if _private(p)), None)
        dotted = ".".join(parts)
        if bad is not None and bad == parts[-1] and dotted.startswith(_PRIVATE_OK_IN):
            bad = None
        if bad is not None:
            self.add("internals_access", node, dotted + f" (private: {bad})")
        elif parts[0] in _RESOLVED_ROOTS and len(parts) > 1:
            other = _escaped_module(parts)
            if other:
                self.add("internals_access", node, dotted + f" (reaches module {other})")

    def _from_import(self, node: ast.AST, parts: list[str]) -> bool:
        """Whether a path's root is a module (or a name from one) that an import bound, not a variable that happens
        to share its name (`flows = []`, `stat = os.stat(p)`)."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        root = _attr_base(node)
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id == "getattr" and root.args:
            root = _attr_base(root.args[0])
        name = root.id if isinstance(root, ast.Name) else ""
        return name in self.imported or name in self.aliases

    def _check_private_attribute(self, node: ast.Attribute) -> None:
        """`x._name` where x is not self, cls or a name of the solution's own: a module or an object reached through a
        container, a call, a parameter or a loop (`[torch][0]._C`, `(lambda t=torch: t)()._C`) is as private as
        `torch._C`, and a name cannot tell them apart."""
        if not _private(node.attr):
            return
        root = _attr_base(node)
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id == "super":
            return  # a parent class's own member
        name = root.id if isinstance(root, ast.Name) else ""
        if name in {"self", "cls"} or name in self.ext_names:
            return
        if name and (name in self.defined or name in self.own) and name not in self.imported:
            return  # the solution's own classes, functions and their objects (`Kernel._cache`, `s = Stats(); s._n`)
        parts = self.resolve(_chain(node))
        if parts and ".".join(parts).startswith(_PRIVATE_OK_IN) and parts[-1] == node.attr:
            return
        self.add("internals_access", node, (".".join(parts) or node.attr) + f" (private: {node.attr})")

    # imports
    def _check_module(self, mod: str, node: ast.AST) -> None:
        top = mod.split(".")[0]
        if top in _THREAD_MODULES and top != "signal":
            self.add("threads_or_processes", node, f"import {mod}")
        if top in {"inspect", "gc"} or mod in {"traceback"}:
            self.add("caller_introspection", node, f"import {mod}")
        if top == "ctypes" or top == "cffi":
            self.add("raw_memory_access", node, f"import {mod}")
        if top in _DYNAMIC_MODULES and mod not in _HARMLESS_NAMES:
            self.add("dynamic_code", node, f"import {mod}")
        if top in _IO_MODULES and top != "os":
            self.add("io_access", node, f"import {mod}")
        if top in {"unittest", "mock", "pytest"}:
            self.add("timer_patching", node, f"import {mod} (mocking)")
        if top == "triton" and not self.allow_triton:
            self.add("torch_compile", node, f"import {mod}")
        if mod.startswith("torch._dynamo") or mod.startswith("torch._inductor") or mod.startswith("torch.fx"):
            self.add("torch_compile", node, f"import {mod}")
        if (
            mod.startswith("torch.utils._python_dispatch")
            or mod.startswith("torch.overrides")
            or mod.startswith("torch.library")
        ):
            self.add("lazy_tensor", node, f"import {mod}")
        if top in {"model", "reference"} or top in self.reference_names:
            self.add("inherits_reference", node, f"import {mod}")

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._check_module(a.name, node)
            self._check_reach(a.name.split("."), node)
            self.imported.add((a.asname or a.name).split(".")[0])
            self.aliases[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            if a.name.split(".")[0] not in {"torch", "numpy", "math", "os", "sys", "typing", "functools"}:
                self.ext_names.add((a.asname or a.name).split(".")[0])
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level:  # relative import inside a workspace: model_new may not import the reference
            if mod in {"model", ""}:
                self.add("inherits_reference", node, f"from .{mod} import ...")
        if not all(f"{mod}.{a.name}" in _HARMLESS_NAMES for a in node.names):
            self._check_module(mod, node)
        for a in node.names:
            full = f"{mod}.{a.name}" if mod else a.name
            self._check_module(full, node)
            self.imported.add(a.asname or a.name)
            if not node.level and a.name != "*":
                self._check_reach(full.split("."), node)
                self._check_path(full.split("."), node)
            self.aliases[a.asname or a.name] = full
            if mod.split(".")[0] not in {"torch", "numpy", "math", "os", "sys", "typing", "functools", "__future__"}:
                self.ext_names.add(a.asname or a.name)
            if a.name in self.reference_names:
                self.add("inherits_reference", node, f"from {mod} import {a.name}")
            if a.name in _TIMER_NAMES and mod.split(".")[0] in {"time", "timeit"}:
                pass  # importing a timer is harmless; assigning to it is caught below
            if a.name in _INTROSPECTION_ATTRS and mod == "sys":
                self.add("caller_introspection", node, f"from sys import {a.name}")
        self.generic_visit(node)

    # definitions
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.defined.add(node.name)
        if not any(isinstance(b, ast.FunctionDef) and b.name == "__new__" for b in node.body) and not node.bases:
            self.classes.add(node.name)
        self.class_stack.append(node.name)
        for b in node.bases:
            parts = self.resolve(_chain(b))
            if parts and parts[-1] in self.reference_names:
                self.add("inherits_reference", node, f"class {node.name}({'.'.join(parts)})")
            if parts and parts[-1] == "Tensor":
                self.add("lazy_tensor", node, f"class {node.name} subclasses torch.Tensor")
            if parts and parts[-1] in {"TorchDispatchMode", "TorchFunctionMode", "Thread", "Process"}:
                name = "lazy_tensor" if "Mode" in parts[-1] else "threads_or_processes"
                self.add(name, node, f"class {node.name}({parts[-1]})")
        for kw in node.keywords:
            if kw.arg == "metaclass":
                self.add("dynamic_code", node, "metaclass")
        self.generic_visit(node)
        self.class_stack.pop()

    def _check_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.defined.add(node.name)
        body = list(node.body)
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body = body[1:]
        if not body or all(
            isinstance(s, ast.Pass)
            or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is Ellipsis)
            for s in body
        ):
            self.add("pass_body", node, f"def {node.name}: body does nothing")
        if isinstance(node, ast.AsyncFunctionDef):
            self.add("threads_or_processes", node, f"async def {node.name}")
        if node.name in {"__torch_function__", "__torch_dispatch__"}:
            self.add("lazy_tensor", node, f"def {node.name}")
        # (__eq__, __bool__, __getattr__ are honest helpers' idioms: outputs reach the comparison as plain tensors
        # loaded by the trusted side, so overridden result semantics decide nothing)
        if node.name in {"__del__", "__getattribute__"}:
            self.add("lazy_tensor", node, f"def {node.name} (deferred / overridden result semantics)")
        if node.name in {"__exit__", "__aexit__"} and any(
            isinstance(r, ast.Return)
            and r.value is not None
            and not (isinstance(r.value, ast.Constant) and r.value.value in (None, False))
            for r in ast.walk(node)
        ):
            # a context manager that may swallow its block's exception: try/except by another name
            self.add("try_except_fallback", node, f"def {node.name} returning a value (an exception swallowed)")
        is_forward = node.name == "forward"
        if is_forward:
            self.forward_args = {a.arg for a in node.args.args + node.args.kwonlyargs} - {"self"}
            for extra in (node.args.vararg, node.args.kwarg):
                if extra is not None:
                    self.forward_args.add(extra.arg)
        self.in_forward += is_forward
        self.fn_depth += 1
        self.generic_visit(node)
        self.fn_depth -= 1
        self.in_forward -= is_forward

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._check_function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._check_function(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.generic_visit(node)

    # control flow
    def visit_Try(self, node: ast.Try) -> None:
        if node.handlers:
            self.add("try_except_fallback", node, "try/except")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            parts = self.resolve(
                _chain(item.context_expr.func if isinstance(item.context_expr, ast.Call) else item.context_expr)
            )
            if parts and parts[-1] == "suppress":
                self.add("try_except_fallback", node, "contextlib.suppress")
        self.generic_visit(node)

    # assignments: patching timers / globals
    def _check_target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._check_target(t, node)
            return
        if isinstance(target, ast.Attribute):
            parts = self.resolve(_chain(target))
            if not parts:
                return
            root = parts[0]
            if root in {"torch", "time", "timeit", "triton"} and parts[-1] in _TIMER_NAMES | {"Event"}:
                self.add("timer_patching", node, f"assigns {'.'.join(parts)}")
            elif (
                root in {"torch", "time", "timeit"}
                and any(p in {"cuda", "Event"} for p in parts[1:])
                and parts[-1] not in {"allow_tf32", "benchmark", "deterministic"}
            ):
                self.add("timer_patching", node, f"assigns {'.'.join(parts)}")
            elif root == "torch" and parts[1:2] == ["backends"]:
                name = "precision_cast" if "tf32" in parts[-1] or "reduced_precision" in parts[-1] else "global_state"
                self.add(name, node, f"assigns {'.'.join(parts)}")
            elif root in {"torch", "sys", "builtins", "os", "gc", "inspect", "threading"}:
                self.add("timer_patching", node, f"assigns module attribute {'.'.join(parts)}")
            elif parts[-1] in {"forward", "__call__", "__class__", "__dict__", "__code__"} and root != "self":
                self.add("timer_patching", node, f"assigns {'.'.join(parts)}")
        if isinstance(target, ast.Name) and target.id in {"__builtins__", "__class__"}:
            self.add("dynamic_code", node, f"assigns {target.id}")

    def visit_Assign(self, node: ast.Assign) -> None:
        names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        if (
            isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in self.classes
            and node.value.func.id not in self.imported
        ):
            self.own.update(names)  # an instance of the solution's own class (one without __new__: below)
        value = self.resolve(_chain(node.value)) if isinstance(node.value, (ast.Name, ast.Attribute)) else []
        if value and not self.fn_depth and (_installed_root(value[0]) or value[0] in _HARNESS_PACKAGES):
            # `T = torch.Tensor` at module or class level: T.__eq__ = ... is torch.Tensor.__eq__ = ...
            for n in names:
                self.aliases[n] = ".".join(value)
        if _makes_extension(node.value, self.resolve):
            self.ext_names.update(names)
        elif self.in_forward and not any(isinstance(n, ast.Call) for n in ast.walk(node.value)):
            # `k = self._kernels`, `ext = EXTS["relu"]`: a name for what self or an extension holds, no call made
            if _root(node.value) in {"self"} | self.ext_names:
                self.ext_names.update(names)
        for t in node.targets:
            self._check_target(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None and isinstance(node.target, ast.Name) and _makes_extension(node.value, self.resolve):
            self.ext_names.add(node.target.id)
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.generic_visit(node)

    # names and attributes
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id in self.reference_names and node.id not in self.class_stack[-1:]:
                self.add("inherits_reference", node, f"uses {node.id}")
            if node.id in {"__builtins__", "__loader__", "__spec__", "emit_result", "PAYLOAD"}:
                self.add("dynamic_code", node, node.id)
        self.generic_visit(node)

    def _check_path(self, parts: list[str], node: ast.AST) -> None:
        """Checks on a dotted path however it was written: `torch.cuda.Stream`, `from torch import compile`,
        `getattr(torch.cuda, "Stream")`."""
        if not parts:
            return
        if parts and parts[0] == "torch":
            tail = parts[1:]
            if any(p in _STREAM_ATTRS for p in tail) and "cuda" in tail:
                self.add("stream_creation", node, ".".join(parts))
            if "cuda" in tail and any(p in _GRAPH_ATTRS for p in tail):
                self.add("cuda_graph", node, ".".join(parts))
            if tail and tail[0] in _COMPILE_ATTRS and tail[0] != "jit" or (tail[:1] == ["jit"] and len(tail) > 1):
                self.add("torch_compile", node, ".".join(parts))
            if any(p in _LAZY_ATTRS for p in tail):
                self.add("lazy_tensor", node, ".".join(parts))
            if tail[:1] == ["_C"]:
                self.add("caller_introspection", node, ".".join(parts) + " (torch internals)")
            if any(p in {"load", "save"} for p in tail[-1:]) and len(tail) == 1:
                self.add("io_access", node, ".".join(parts))
        if parts[-1] in {"__torch_function__", "__torch_dispatch__", "_make_subclass", "_make_wrapper_subclass"}:
            self.add("lazy_tensor", node, parts[-1])
        if parts[-1] in _PRECISION_ATTRS:
            self.add("precision_cast", node, ".".join(parts))
        if (
            parts
            and parts[0] in {"os"}
            and parts[-1]
            in {
                "system",
                "popen",
                "fork",
                "spawnl",
                "spawnv",
                "execv",
                "execl",
                "posix_spawn",
                "forkpty",
                "kill",
                "_exit",
            }
        ):
            self.add("threads_or_processes", node, ".".join(parts))
        if (
            parts
            and parts[0] == "os"
            and parts[-1]
            in {
                "open",
                "write",
                "read",
                "dup",
                "dup2",
                "environ",
                "remove",
                "listdir",
                "scandir",
                "walk",
                "fdopen",
                "pipe",
            }
        ):
            self.add("io_access", node, ".".join(parts))
        if parts[0] == "os" and parts[-1].startswith(("exec", "spawn", "posix_spawn", "fork")):
            self.add("threads_or_processes", node, ".".join(parts))
        if parts[:2] == ["torch", "multiprocessing"] or parts[:2] == ["torch", "distributed"]:
            self.add("threads_or_processes", node, ".".join(parts))
        if parts[0] in {"np", "numpy"} and parts[-1] in _NUMPY_FILE_FUNCS:
            self.add("io_access", node, ".".join(parts))
        if parts[:2] == ["torch", "from_file"] or parts[:2] == ["torch", "serialization"]:
            self.add("io_access", node, ".".join(parts))
        if parts[-1] == "load_library" and parts[0] == "torch":  # a binary the build step never checked
            self.add("dynamic_code", node, ".".join(parts))
        if parts[0] == "operator" and parts[-1] in {"attrgetter", "methodcaller"}:
            self.add("dynamic_code", node, ".".join(parts) + " (names looked up by string)")

    def _torch_op_held(self, parts: list[str], node: ast.AST) -> None:
        """A torch compute function taken as a value (`self.fast = torch.softmax`, called later through self): the
        forward's calls through self are trusted to be kernels, so the op is named where it is taken."""
        if len(parts) < 2 or parts[0] != "torch":
            return
        name = parts[-1]
        functional = parts[1] == "nn" and "functional" in parts[:-1]
        if (
            functional
            or parts[1] in {"linalg", "fft", "special", "sparse"}
            and len(parts) == 3
            or len(parts) == 2
            and name in COMPUTE_METHODS
            and name not in ALLOWED_TORCH_FUNCS
        ):
            self.add("torch_compute_op", node, ".".join(parts) + " taken as a value (called later)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts = self.resolve(_chain(node))
        attr = node.attr
        if id(node) not in self.called and isinstance(node.ctx, ast.Load):
            self._torch_op_held(parts, node)
        if attr in _INTROSPECTION_ATTRS:
            root = parts[:1]
            benign = (
                (attr == "modules" and root != ["sys"])
                or (attr == "stack" and root not in (["inspect"], ["traceback"]))
                or (attr == "audit" and root != ["sys"])
            )
            if not benign:
                self.add("caller_introspection", node, ".".join(parts) or attr)
        self._check_path(parts, node)
        self._check_reach(parts, node)
        self._check_private_attribute(node)
        if attr == "__dict__" and parts[:1] != ["self"]:
            self.add("dynamic_code", node, ".".join(parts) + " (names looked up by string)")
        if attr in _LOOKUP_DUNDERS:
            self.add("dynamic_code", node, (".".join(parts) or attr) + " (attributes looked up by string)")
        if attr == "modules" and id(node) not in self.called and parts[:1] != ["self"]:
            # sys.modules however it is reached ([sys][0].modules); nn.Module's modules() is called
            self.add("caller_introspection", node, ".".join(parts) or attr)
        if attr in _FILE_METHODS:
            self.add("io_access", node, f".{attr}")
        self.generic_visit(node)

    def _kernel_receiver(self, recv: ast.AST) -> bool:
        """A receiver that holds kernels, not tensors: self's members, extensions (and names for them), math/numpy,
        or what a plain function returns (`_ext().softmax(x)`, a lazy loader)."""
        if _root(recv) in {"self", "math", "np", "numpy"} | self.ext_names:
            return True
        return (
            isinstance(recv, ast.Call)
            and isinstance(recv.func, ast.Name)
            and self.resolve([recv.func.id])[0] != "torch"
        )

    def _reads_inputs(self, call: ast.Call) -> bool:
        """numpy called on forward's inputs (`np.exp(x)`), not on sizes kept in self or computed (`np.sqrt(self.d)`,
        `np.ceil(n / 256)`): numpy cannot read a device tensor without a copy to the host, which the op guard
        refuses at run time; this names the line."""
        args = [*call.args, *(k.value for k in call.keywords)]
        return any(isinstance(n, ast.Name) and n.id in self.forward_args for a in args for n in ast.walk(a))

    def visit_Call(self, node: ast.Call) -> None:
        self.called.add(id(node.func))
        parts = self.resolve(_chain(node.func))
        name = parts[-1] if parts else (node.func.attr if isinstance(node.func, ast.Attribute) else "")
        if isinstance(node.func, ast.Name):
            if node.func.id in _DYNAMIC_BUILTINS:
                self.add("dynamic_code", node, f"{node.func.id}()")
            if node.func.id == "open":
                self.add("io_access", node, "open()")
            if node.func.id in {"getattr", "setattr", "delattr", "hasattr"} and len(node.args) >= 2:
                target = self.resolve(_chain(node.args[0]))
                if not isinstance(node.args[1], ast.Constant):
                    self.add("dynamic_code", node, f"{node.func.id} with a computed name")
                elif node.func.id in {"setattr", "delattr"} and (
                    (target and target[0] in {"torch", "time", "timeit", "sys", "builtins", "gc", "os"})
                    or node.args[1].value in _TIMER_NAMES | {"forward", "__call__", "__class__"}
                ):
                    self.add("timer_patching", node, f"{node.func.id}({'.'.join(target)}, {node.args[1].value!r})")
                elif isinstance(node.args[1].value, str) and node.args[1].value in _INTROSPECTION_ATTRS:
                    self.add("caller_introspection", node, f"getattr(..., {node.args[1].value!r})")
                const = node.args[1].value if isinstance(node.args[1], ast.Constant) else None
                if node.func.id != "hasattr" and isinstance(const, str) and _private(const):
                    self.add("internals_access", node, f"{node.func.id}(..., {const!r}) (private: {const})")
                if node.func.id != "hasattr" and isinstance(const, str) and target:
                    # getattr(torch, "_C") is torch._C
                    self._check_path(target + [node.args[1].value], node)
                    self._check_reach(target + [node.args[1].value], node)
                    self._torch_op_held(target + [node.args[1].value], node)
        if parts and parts[0] == "torch":
            if name in {"Stream", "stream", "ExternalStream", "set_stream"}:
                self.add("stream_creation", node, ".".join(parts) + "()")
            if self.in_forward and len(parts) >= 2:
                is_func = parts[1] == "nn" and "functional" in parts
                is_torch_op = len(parts) == 2 and name not in ALLOWED_TORCH_FUNCS and not name[:1].isupper()
                is_linalg = parts[1] in {"linalg", "fft", "special", "sparse"}
                if is_func or is_torch_op or is_linalg:
                    self.add("torch_compute_op", node, ".".join(parts) + "() in forward")
        elif (
            self.in_forward
            and isinstance(node.func, ast.Attribute)
            and name in COMPUTE_METHODS
            and isinstance(node.func.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.BinOp))
            and not self._kernel_receiver(node.func.value)
        ):
            # x.relu(), y.sum(): the runtime guard is authoritative; this names the line for the agent.
            self.add("torch_compute_op", node, f".{name}() in forward")
        to_host = name == "to" and any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("cpu")
            for a in [*node.args, *(k.value for k in node.keywords)]
        )
        if (
            self.in_forward
            and (
                (isinstance(node.func, ast.Attribute) and (name in {"cpu", "numpy", "tolist"} or to_host))
                or (parts[:1] in (["np"], ["numpy"]) and self._reads_inputs(node))  # also `exp(x)` imported
            )
            and not (parts[:1] in (["np"], ["numpy"]) and _shape_only(node))  # np.prod(x.shape[1:]): no data
        ):
            self.add("host_compute", node, f"{'.'.join(parts) or name}() in forward")
        if (
            parts[:3] == ["torch", "ops", "aten"]
            or parts[:2] == ["torch", "_refs"]
            or parts[:2] == ["torch", "_prims"]
            or name == "redispatch"  # an operator called past the Python dispatch key (past the op guard)
        ):
            self.add("torch_compute_op", node, ".".join(parts) + "()")
        if name in DISPATCH_TLS or name.startswith("_dispatch_tls"):
            # telling guarded calls from timed ones (the op guard's dispatch key), or switching it off
            self.add("caller_introspection", node, ".".join(parts) + "()")
        if name in {"half", "bfloat16"} and isinstance(node.func, ast.Attribute):
            self.add("precision_cast", node, f".{name}()")
        if name == "manual_seed" or name == "seed":
            self.add("global_state", node, ".".join(parts) + "()")
        if name in {"Thread", "Process", "Pool", "ThreadPoolExecutor", "ProcessPoolExecutor", "start_new_thread"}:
            self.add("threads_or_processes", node, ".".join(parts) + "()")
        self.generic_visit(node)


def _strings(tree: ast.AST) -> list[tuple[int, str, bool]]:
    """String constants long enough to be source code: (line, text, is a docstring)."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) >= 30:
            out.append((node.lineno, node.value, id(node) in docs))
    return out


def check_python(
    code: str,
    file: str = "solution.py",
    *,
    reference_names: set[str] | None = None,
    allow_triton: bool = False,
    require_model_new: bool = True,
) -> list[Finding]:
    """Findings for Python source, including the C++/CUDA found in its long string constants."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as e:
        return [Finding("syntax_error", STRICT, getattr(e, "lineno", 0) or 0, str(e)[:200], file)]
    checker = _PyChecker(file, reference_names or {"Model"}, allow_triton)
    # Pre-collect top-level definitions so a solution that defines its own helper named like the reference is
    # judged on use, not on the name.
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name not in (reference_names or {"Model"}):
            checker.defined.add(node.name)
    checker.visit(tree)
    findings = checker.findings
    if require_model_new and not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ast.walk(tree)):
        findings.append(Finding("no_model_new", STRICT, 0, "no class ModelNew", file))
    for lineno, text, doc in _strings(tree):
        if _looks_like_cpp(text):
            for f in check_cpp(text, file=f"{file}:string@{lineno}"):
                if doc and f.name == "torch_compute_op":
                    # prose naming torch's C++ (`faster than at::softmax`); a docstring that is code (read through
                    # __doc__) calls torch only through the dispatcher, where the op guard sees it
                    continue
                f.line = lineno + max(f.line - 1, 0)
                findings.append(f)
    return findings


# ---------------------------------------------------------------- C++ / CUDA

DISPATCH_TLS = {
    "DispatchKeySet",
    "_ExcludeDispatchKeyGuard",
    "_IncludeDispatchKeyGuard",
    "_DisableTorchDispatch",
    "_disabled_torch_dispatch_impl",
    "_PreserveDispatchKeyGuard",
    "_ForceDispatchKeyGuard",
}

_CPP_CHECKS: list[tuple[str, re.Pattern]] = [
    (
        "stream_creation",
        re.compile(
            r"\bcudaStreamCreate\w*|\bgetStreamFromPool\b|\bcudaStreamPerThread\b|"
            r"\bcudaStreamNonBlocking\b|\bsetCurrentCUDAStream\b|\bgetStreamFromExternal\b|"
            r"\bcudaStreamLegacy\b|\bcuStreamCreate\w*"
        ),
    ),
    ("cuda_graph", re.compile(r"\bcudaGraph\w*|\bcudaStreamBeginCapture\b|\bCUDAGraph\b|\bcuGraph\w*")),
    (
        "threads_or_processes",
        re.compile(
            r"\bstd::thread\b|\bpthread_create\b|\bstd::async\b|\bfork\s*\(|"
            r"\bstd::jthread\b|\bcudaLaunchHostFunc\b|\bcudaStreamAddCallback\b|"
            r"#\s*pragma\s+omp\b|\bsystem\s*\(|\bpopen\s*\("
        ),
    ),
    ("try_except_fallback", re.compile(r"\btry\s*\{|\bcatch\s*\(")),
    (
        "timer_patching",
        re.compile(
            r"\bcudaEventRecord\b|\bcudaEventElapsedTime\b|\bdlsym\b|\bLD_PRELOAD\b|"
            r"\bcudaEventDestroy\b|\bcuEventRecord\b"
        ),
    ),
    (
        "caller_introspection",
        re.compile(
            r"\bPyEval_GetFrame\b|\bPyFrame_\w+|\bPyGC_\w+|\bPyImport_\w+|"
            r"\bPyRun_\w+|\bpy::module_::import\b|\bpybind11::module_::import\b|"
            r"\bpy::module::import\b|\bpy::eval\b|\bpy::exec\b|\bPyObject_GetAttr\w*|"
            r"\bpy::globals\b|\bTorchDispatchModeTLS\b|\bExcludeDispatchKeyGuard\b|"
            r"\btls_local_dispatch_key_set\b|\bIncludeDispatchKeyGuard\b|\bPythonTLSSnapshot\b|"
            r"\btls_is_dispatch_key_\w+|\bc10::impl::tls_\w+"
        ),
    ),
    (
        "io_access",
        re.compile(
            r"\bfopen\s*\(|\bstd::[io]?fstream\b|\bopen\s*\(\s*\"|\bmmap\s*\(|\bsocket\s*\(|"
            r"\bcudaIpc\w+"
        ),
    ),
    (
        "torch_compute_op",
        re.compile(
            r"\b(?:torch|at)\s*::\s*_?(?:matmul|mm|bmm|addmm|relu|sigmoid|tanh|softmax|log_softmax|"
            r"conv\w*|linear|sum|mean|exp|log|add|mul|sub|div|max|min|layer_norm|"
            r"batch_norm|gelu|silu|where|clamp|pow|sqrt|einsum|cat|stack|norm|var|std|"
            r"argmax|topk|sort|cumsum|baddbmm|dropout|embedding|abs)(?:_out|_)?\s*\(|"
            # an operator called past the dispatcher's front (past the op guard): at::_ops::X::call / ::redispatch
            r"\bat\s*::\s*_ops\s*::|\bredispatch\b"
        ),
    ),
    # A persisting access-policy window (or L2 set-aside) keeps lines resident through the harness's L2 flush, so
    # timed calls read from a cache that a real first call would find cold. (Per-access hints such as evict_last do
    # not outlive a call's own traffic much and stay allowed.)
    (
        "l2_persistence",
        re.compile(
            r"\b\w*AccessPolicyWindow\b|\baccessPolicyWindow\b|\bcudaAccessPropertyPersisting\b|"
            r"\bcudaLimitPersistingL2CacheSize\b|\bcudaCtxResetPersistingL2Cache\b|"
            r"\bCU_LIMIT_PERSISTING_L2_CACHE_SIZE\b|\bCU_ACCESS_PROPERTY_PERSISTING\b|"
            r"\bCU_\w*ACCESS_POLICY_WINDOW\b|\baccess_property::persisting\b|"
            r"\bpersistingL2CacheMaxSize\b"
        ),
    ),
    # The same libraries the op guard closes at dispatch (`allow_libraries`), called directly instead of through
    # torch; check_solution_files drops the findings of the libraries allowed.
    (
        "library_call",
        re.compile(
            r"\bcublas\w*\s*\(|\bgetCurrentCUDABlas\w*Handle\b|#\s*include\s*[<\"]cublas\w*|"
            r"\bcudnn\w*\s*\(|\bgetCudnnHandle\b|#\s*include\s*[<\"]cudnn\w*"
        ),
    ),
    ("global_state", re.compile(r"\bcudaDeviceSetLimit\b|\bcudaDeviceReset\b|\bcudaSetDevice\b")),
    (
        "precision_cast",
        re.compile(
            r"\b__half2?\b|\b__float2half\w*|\b__nv_bfloat16\w*|\b__float2bfloat16\w*|"
            r"\bat::kHalf\b|\bat::kBFloat16\b|\btorch::kHalf\b|\btorch::kBFloat16\b|"
            r"\bnvcuda::wmma\b|\bwmma::|\b__nv_fp8\w*|\bhalf2\b|\.half\(\)|tf32"
        ),
    ),
]


def _looks_like_cpp(text: str) -> bool:
    # C++ that reaches a compiler has statements or blocks; prose naming `at::relu(x)` has neither
    return bool(
        re.search(r"__global__|#include|torch::|at::|<<<|extern\s+\"C\"|PYBIND11_MODULE|cuda\w*\(", text)
        and re.search(r"[;{]", text)
    )


def _strip_cpp_comments(src: str) -> str:
    # Keep line numbers: replace comments by the same number of newlines; leave string literals alone.
    def repl(m: re.Match) -> str:
        s = m.group(0)
        return s if s.startswith('"') else "\n" * s.count("\n")

    return re.sub(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', repl, src, flags=re.S)


def _blank_strings(code: str) -> str:
    """String literals emptied (an error message that names `x.sum(-1)` calls nothing)."""
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', code)


def check_cpp(src: str, file: str = "kernel.cu") -> list[Finding]:
    """Findings for CUDA / C++ source (comments stripped first; string literals too, for torch calls). A tensor
    method called in C++ (`x.sum()`) is left to the op guard, which sees it at dispatch: a pattern for it also
    named the kernels' own structs (`acc.add(v)` on a Welford accumulator)."""
    code = _strip_cpp_comments(src)
    bare = _blank_strings(code)
    findings = []
    for name, pat in _CPP_CHECKS:
        for m in pat.finditer(bare if name == "torch_compute_op" else code):
            line = code.count("\n", 0, m.start()) + 1
            findings.append(Finding(name, VIOLATIONS[name][0], line, m.group(0)[:100], file))
    return findings


# ---------------------------------------------------------------- summary


def summarize(findings: list[Finding], warnings_reject: bool = False) -> tuple[list[str], list[str]]:
    """(violations, warnings): unique names, in first-seen order."""
    violations: list[str] = []
    warnings: list[str] = []
    for f in findings:
        target = violations if (f.severity == STRICT or warnings_reject) else warnings
        if f.name not in target:
            target.append(f.name)
    return violations, warnings


LIBRARIES = ("cudnn", "cufft", "cusparse", "cusolver", "nccl", "cutensor", "cublas")


def library_of(finding: Finding) -> str:
    """The library ("cublas", "cudnn", "cufft", ...) a `library_call` finding names (cuBLAS when none is named)."""
    detail = finding.detail.lower()
    return next((lib for lib in LIBRARIES if lib in detail), "cublas")


def check_solution_files(
    files: dict[str, str],
    *,
    allow_triton: bool = False,
    reference_names: set[str] | None = None,
    allow_libraries: list[str] | tuple[str, ...] = (),
) -> list[Finding]:
    """Check every file of a solution: `{relative path: source}`. The file holding ModelNew must be .py."""
    findings: list[Finding] = []
    for path, src in sorted(files.items()):
        if path.endswith(".py"):
            is_main = path.rsplit("/", 1)[-1] in {"model_new.py", "solution.py"} or "ModelNew" in src
            findings += check_python(
                src, path, reference_names=reference_names, allow_triton=allow_triton, require_model_new=is_main
            )
        elif path.endswith((".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".cxx")):
            findings += check_cpp(src, path)
    return without_allowed_libraries(findings, allow_libraries)


def without_allowed_libraries(findings: list[Finding], allow_libraries) -> list[Finding]:
    """The findings less the `library_call`s of libraries the options allow."""
    allowed = {str(x).lower() for x in allow_libraries or ()}
    return [f for f in findings if not (f.name == "library_call" and library_of(f) in allowed)]
