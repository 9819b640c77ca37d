"""Static filters over a candidate's source (standard library only: they also run on GPU workers).

Each returns "" when it passes, else its reason code, plus a short detail.
"""

from __future__ import annotations

import ast

DEFAULT_ALLOWED_IMPORTS = (
    "torch",
    "math",
    "numpy",
    "typing",
    "functools",
    "itertools",
    "collections",
    "operator",
    "dataclasses",
    "__future__",
    "transformers.activations",
)
# Builtins that reach the file system, the interpreter or dynamic code; no operator task needs them.
DISALLOWED_BUILTINS = {
    "open",
    "exec",
    "eval",
    "compile",
    "__import__",
    "globals",
    "breakpoint",
    "input",
    "memoryview",
    "vars",
    "setattr",
    "delattr",
}
# Random-sampling APIs (torch's "Random sampling" section and Tensor's in-place samplers) and stochastic layers.
STOCHASTIC_NAMES = {
    "rand",
    "rand_like",
    "randn",
    "randn_like",
    "randint",
    "randint_like",
    "randperm",
    "bernoulli",
    "multinomial",
    "normal",
    "poisson",
    "normal_",
    "uniform_",
    "bernoulli_",
    "exponential_",
    "geometric_",
    "cauchy_",
    "log_normal_",
    "random_",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "rrelu",
    "rrelu_",
    "RReLU",
    "gumbel_softmax",
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
}
REQUIRED = ("Model", "get_inputs", "get_init_inputs")
# Attribute names that lead out of the computation whatever object they hang from (`torch.os`, `np.ctypeslib`,
# `torch.utils.cpp_extension.subprocess`, `torch.save`): modules re-exported by torch and numpy, file and process
# I/O, native code loaders, interpreter internals. No operator task needs any of them.
DENIED_ATTRIBUTES = {
    "os",
    "sys",
    "ctypes",
    "ctypeslib",
    "subprocess",
    "importlib",
    "builtins",
    "socket",
    "shutil",
    "pathlib",
    "io",
    "gc",
    "inspect",
    "pickle",
    "marshal",
    "multiprocessing",
    "threading",
    "signal",
    "mmap",
    "resource",
    "fcntl",
    "pty",
    "tempfile",
    "glob",
    "runpy",
    "code",
    "codeop",
    "pdb",
    "atexit",
    "weakref",
    "faulthandler",
    "platform",
    "sysconfig",
    "site",
    "posix",
    "environ",
    "system",
    "popen",
    "spawn",
    "fork",
    "execv",
    "execve",
    "cdll",
    "CDLL",
    "dlopen",
    "pythonapi",
    "cpp_extension",
    "load_inline",
    "load_library",
    "library",
    "classes",
    "hub",
    "jit",
    "save",
    "load",
    "savez",
    "savez_compressed",
    "savetxt",
    "loadtxt",
    "genfromtxt",
    "fromfile",
    "tofile",
    "memmap",
    "from_file",
    "serialization",
    "untyped_storage",
    "settrace",
    "setprofile",
    "addaudithook",
    "f_back",
    "f_globals",
    "f_locals",
    "f_builtins",
    "gi_frame",
    "cr_frame",
    "tb_frame",
    "co_code",
    "mro",
    "register_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "_apply",
    "compiler",
    "_dynamo",
    "_inductor",
}
# Attribute names a task may use although they start with an underscore.
ALLOWED_PRIVATE = {"__init__", "__class__", "__name__"}


def parse(code: str) -> tuple[ast.Module | None, str, str]:
    try:
        return ast.parse(code), "", ""
    except (SyntaxError, ValueError) as e:
        return None, "syntax_error", f"{type(e).__name__}: {e}"[:300]


def check_structure(tree: ast.Module) -> tuple[str, str]:
    """Top level defines class Model and functions get_inputs / get_init_inputs."""
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = "class"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = "def"
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.setdefault(t.id, "assign")
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        return "missing_definitions", "missing: " + ", ".join(missing)
    return "", ""


def _module_allowed(name: str, allowed: tuple[str, ...]) -> bool:
    return any(name == a or name.startswith(a + ".") for a in allowed)


def check_imports(tree: ast.Module, allowed: tuple[str, ...] = DEFAULT_ALLOWED_IMPORTS) -> tuple[str, str]:
    """Only allowlisted modules, and no builtins that reach outside the computation."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if not _module_allowed(a.name, allowed):
                    return "disallowed_import", f"import {a.name}"
        elif isinstance(node, ast.ImportFrom):
            mod = ("." * node.level) + (node.module or "")
            if node.level or not (
                _module_allowed(mod, allowed) or any(_module_allowed(f"{mod}.{a.name}", allowed) for a in node.names)
            ):
                return "disallowed_import", f"from {mod} import ..."
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DISALLOWED_BUILTINS:
            return "disallowed_import", f"call to builtin {node.func.id}()"
        elif isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__", "__spec__"):
            return "disallowed_import", f"access to {node.id}"
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr not in ALLOWED_PRIVATE:
            return "disallowed_import", f"dunder attribute .{node.attr}"
        elif isinstance(node, ast.Attribute) and node.attr in DENIED_ATTRIBUTES:
            return "disallowed_import", f"attribute .{node.attr} (leads out of the computation)"
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and node.attr not in ALLOWED_PRIVATE
            and not (isinstance(node.value, ast.Name) and node.value.id == "self")
        ):
            return "disallowed_import", f"private attribute .{node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            name = node.args[1] if len(node.args) > 1 else None
            if (
                not (isinstance(name, ast.Constant) and isinstance(name.value, str))
                or name.value.startswith("_")
                or name.value in DENIED_ATTRIBUTES
            ):
                return "disallowed_import", f"{node.func.id}() with a computed or forbidden name"
        elif isinstance(node, ast.Name) and node.id in ("getattr", "type", "super") and not _called(node, tree):
            return "disallowed_import", f"{node.id} used as a value"
    return "", ""


def _called(name: ast.Name, tree: ast.Module) -> bool:
    """`name` is the function of a call (not passed around, where a static check could no longer follow it)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.func is name:
            return True
    return False


def _imported_names(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.update(a.asname or a.name for a in node.names)
    return out


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def check_patching(tree: ast.Module) -> tuple[str, str]:
    """No assignment to (or deletion of) an attribute of an imported module or class: `torch.allclose = ...`,
    `torch.Tensor.add = ...`, `F.relu = ...` would change what the filters themselves compute with."""
    imported = _imported_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        else:
            continue
        for t in targets:
            for sub in ast.walk(t):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, (ast.Store, ast.Del))
                    and _root_name(sub) in imported
                ):
                    return "monkey_patching", f"assigns {ast.unparse(sub)}"[:300]
    return "", ""


def check_stochastic(tree: ast.Module, names: set[str] = STOCHASTIC_NAMES) -> tuple[str, str]:
    """No random sampling in Model outside __init__ (weights may be drawn there), no stochastic layers at all."""
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name == "Model"):
            continue
        for item in node.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(item):
                ident = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else None
                if ident is None or ident not in names:
                    continue
                # Drawing initial weights in __init__ is fine; a stochastic layer constructed there is not.
                if item.name == "__init__" and not ident[:1].isupper():
                    continue
                return "stochastic_op_static", f"{item.name}: {ident}"
    return "", ""


def static_checks(
    code: str, allowed_imports: tuple[str, ...] = DEFAULT_ALLOWED_IMPORTS, enforce_imports: bool = True
) -> list[tuple[str, str, str]]:
    """[(check name, reason code or "", detail)] in filter order; stops after a syntax error."""
    tree, reason, detail = parse(code)
    out = [("syntax", reason, detail)]
    if tree is None:
        return out
    out.append(("structure",) + check_structure(tree))
    out.append(("imports",) + (check_imports(tree, allowed_imports) if enforce_imports else ("", "not enforced")))
    out.append(("patching",) + check_patching(tree))
    out.append(("static_stochastic",) + check_stochastic(tree))
    return out
