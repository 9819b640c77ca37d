"""Runtime guards around untrusted solution code (torch + stdlib only; runs inside the evaluation worker).

- `OpGuard`: a TorchDispatchMode active during ModelNew.forward. Every aten op reaches it, whether called from
  Python (torch.*, F.*, tensor methods, torch.ops) or from C++ in the candidate's binding (at::relu): compute ops
  raise and are recorded as `torch_op_in_forward`; allocation, views and copies pass; library groups (cuBLAS,
  cuDNN) can be allowed.
- `AuditWatch`: a PEP 578 audit hook that records introspection of the harness (gc.get_objects/get_referrers,
  sys._getframe from solution files, sys._current_frames, settrace/setprofile, ctypes memory reads, new threads)
  while candidate code runs. It records; blocking of processes/network/files is the sandbox's hook.
- `snapshot_integrity` / `integrity_violations`: identities of timers, synchronize, Event methods and global
  torch flags before the candidate is loaded, compared afterwards.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pipeline.patchwatch import replaced, watched

# aten ops that allocate, view, copy or read metadata: allowed inside ModelNew.forward.
ALLOWED_OPS = {
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "zeros",
    "zeros_like",
    "new_zeros",
    "zero_",
    "fill_",
    "ones",
    "ones_like",
    "new_ones",
    "full",
    "full_like",
    "new_full",
    "scalar_tensor",
    "view",
    "_unsafe_view",
    "reshape",
    "_reshape_alias",
    "as_strided",
    "expand",
    "permute",
    "transpose",
    "t",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "select",
    "slice",
    "narrow",
    "split",
    "split_with_sizes",
    "chunk",
    "unbind",
    "alias",
    "detach",
    "detach_",
    "lift_fresh",
    "lift_fresh_copy",
    "contiguous",
    "clone",
    "copy_",
    "_to_copy",
    "to",
    "resize_",
    "set_",
    "record_stream",
    "_local_scalar_dense",
    "item",
    "is_nonzero",
    "view_as",
    "expand_as",
    "reshape_as",
    "movedim",
    "squeeze_",
    "unsqueeze_",
    "as_strided_",
    "is_same_size",
    "_has_compatible_shallow_copy_type",
    "sym_size",
    "sym_stride",
    "sym_numel",
    "sym_storage_offset",
    "dim",
    "size",
    "stride",
    "numel",
    "is_contiguous",
    "storage_offset",
    "_nested_tensor_from_mask_left_aligned",
    "_version",
    "empty_permuted",
    "unfold",
    "diagonal",
    "real",
    "view_as_real",
    "view_as_complex",
}
LIBRARY_OPS = {
    "cublas": {
        "mm",
        "addmm",
        "bmm",
        "baddbmm",
        "addbmm",
        "matmul",
        "mv",
        "addmv",
        "dot",
        "vdot",
        "linear",
        "_addmm_activation",
        "addr",
        "outer",
        "_scaled_mm",
        "einsum",
        "tensordot",
    },
    "cudnn": {
        "convolution",
        "_convolution",
        "cudnn_convolution",
        "cudnn_convolution_transpose",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "cudnn_batch_norm",
        "_cudnn_rnn",
        "miopen_convolution",
        "convolution_overrideable",
        "_conv_depthwise2d",
        "conv_depthwise3d",
        "cudnn_convolution_relu",
        "cudnn_convolution_add_relu",
    },
}
_COMPUTE_NAMESPACES = {"aten", "prims", "prim", "quantized", "_quantized", "rngprims", "inductor", "triton"}
# libraries whose ops compute and that may be importable beside torch (their namespaces appear only once imported)
_LIBRARY_NAMESPACES = {"torchvision", "torchaudio", "xformers", "flash_attn", "fbgemm", "mmcv", "apex", "deepspeed"}
_HARMLESS_NAMESPACES = {"profiler"}  # record_function's ops


def torch_namespaces() -> frozenset[str]:
    """The operator namespaces registered now: called before any candidate code loads, torch's own (aten, prims,
    mkldnn, onednn, quantized, c10d, ...). Their ops are torch's kernels, not the candidate's, whatever the
    namespace: `mkldnn::_linear_pointwise` computed a Linear and a ReLU past a guard that knew only aten's. The
    candidate's own extension registers a namespace of its own, after this."""
    try:
        names = {s.name.partition("::")[0] for s in torch._C._jit_get_all_schemas()}
    except Exception:  # noqa: BLE001 - an older torch: the fixed list alone
        names = set()
    return frozenset((names | _COMPUTE_NAMESPACES | _LIBRARY_NAMESPACES) - _HARMLESS_NAMESPACES)


class ForbiddenTorchOp(RuntimeError):
    pass


class OpGuard(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps mode handlers in _disable_dynamo, whose first call imports torch._dynamo (~5 s per
        # process); this mode never runs under torch.compile, so it needs no wrapper.
        return False

    def __init__(
        self,
        allow_libraries: list[str] | None = None,
        allow_ops: list[str] | None = None,
        namespaces: frozenset[str] | None = None,
    ) -> None:
        super().__init__()
        # torch_namespaces() as taken before the candidate's code loaded (the fixed list where not given)
        self.namespaces = namespaces or frozenset(_COMPUTE_NAMESPACES | _LIBRARY_NAMESPACES)
        self.allowed = set(ALLOWED_OPS) | set(allow_ops or [])
        for lib in allow_libraries or []:
            self.allowed |= LIBRARY_OPS.get(lib, set())
        self.blocked: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name  # e.g. "aten::relu"
        ns, _, base = name.partition("::")
        if ns in self.namespaces and base not in self.allowed and base.rstrip("_") not in self.allowed:
            if name not in self.blocked:
                self.blocked.append(name)
            raise ForbiddenTorchOp(
                f"opforge: torch op {name} is not allowed inside ModelNew.forward "
                f"(write a kernel; allowed libraries are configured by the harness)"
            )
        if base in _COPIES and _to_host(base, args, kwargs or {}):
            # a copy is allowed, but a device tensor's data copied to the host is host compute's first step
            what = f"{name} (device to host)"
            if what not in self.blocked:
                self.blocked.append(what)
            raise ForbiddenTorchOp(f"opforge: {what} is not allowed inside ModelNew.forward (compute on the GPU)")
        return func(*args, **(kwargs or {}))


_COPIES = {"_to_copy", "to", "copy_", "copy", "_copy_from", "_copy_from_and_resize"}


def _to_host(base: str, args: tuple, kwargs: dict) -> bool:
    """Whether a copy op moves a CUDA tensor's data to a CPU tensor."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not any(t.is_cuda for t in tensors):
        return False
    if base in {"_to_copy", "to"}:
        dev = kwargs.get("device")
        if dev is None:
            dev = next((a for a in args[1:] if isinstance(a, (torch.device, str))), None)
        return dev is not None and torch.device(dev).type == "cpu"
    if base in {"copy_", "copy"}:  # copy_(dst, src)
        return isinstance(args[0], torch.Tensor) and args[0].device.type == "cpu" and tensors[-1].is_cuda
    # _copy_from(src, dst)
    return len(tensors) >= 2 and tensors[0].is_cuda and tensors[1].device.type == "cpu"


class AuditWatch:
    """Records harness-introspection events while `active` is true (audit hooks cannot be removed, so one
    instance serves the whole worker)."""

    def __init__(self, solution_files: set[str]) -> None:
        self.active = False
        self.events: list[tuple[str, str]] = []
        self.solution_files = solution_files
        self._busy = threading.local()
        sys.addaudithook(self._hook)
        self._wrap_thread_starts()

    def _wrap_thread_starts(self) -> None:
        """Python has no audit event for new threads (3.11/3.12): wrap the functions every Python thread goes
        through, so a thread started by candidate code is recorded even if it has finished by the next check."""
        import _thread

        watch = self

        def wrap(fn):
            def start(*args, **kwargs):
                if watch.active:
                    watch._add("threads_or_processes", "a thread was started")
                return fn(*args, **kwargs)

            return start

        for mod in (_thread, threading):
            for name in (
                "start_new_thread",
                "start_new",
                "_start_new_thread",
                "start_joinable_thread",
                "_start_joinable_thread",
            ):
                fn = getattr(mod, name, None)
                if callable(fn):
                    setattr(mod, name, wrap(fn))

    def _add(self, name: str, detail: str) -> None:
        if len(self.events) < 200 and (name, detail) not in self.events:
            self.events.append((name, detail))

    def _caller_is_solution(self) -> bool:
        f = sys._getframe(2)  # audited itself: the re-entrancy flag below keeps the hook quiet
        for _ in range(6):
            if f is None:
                return False
            if f.f_code.co_filename in self.solution_files:
                return True
            f = f.f_back
        return False

    def _hook(self, event: str, args: tuple) -> None:
        if not self.active or getattr(self._busy, "on", False):
            return
        self._busy.on = True
        try:
            if event in (
                "gc.get_objects",
                "gc.get_referrers",
                "gc.get_referents",
                "sys._current_frames",
                "sys.setprofile",
                "sys.settrace",
                "object.__getattr__",
            ):
                if event != "object.__getattr__" or (
                    len(args) > 1 and args[1] in ("f_back", "f_locals", "f_globals", "tb_frame", "gi_frame")
                ):
                    self._add("caller_introspection", event)
            elif event in ("sys._getframe", "sys._getframemodulename"):
                if self._caller_is_solution():
                    self._add("caller_introspection", event)
            elif event in (
                "ctypes.cdata",
                "ctypes.addressof",
                "ctypes.string_at",
                "ctypes.wstring_at",
                "ctypes.dlsym",
                "ctypes.call_function",
            ):
                if self._caller_is_solution():
                    self._add("raw_memory_access", event)
            elif event in ("_thread.start_new_thread", "os.fork", "os.forkpty", "os.system"):
                # (subprocesses are the sandbox's: it allows compilers, which load_inline runs, and blocks the rest)
                self._add("threads_or_processes", event)
            elif event in ("sys.addaudithook", "cpython.PyInterpreterState_Clear", "sys.unraisablehook"):
                self._add("caller_introspection", event)
        finally:
            self._busy.on = False


# --------------------------------------------------------------------------- integrity of timers and globals


def _flags() -> dict[str, Any]:
    return {
        "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cudnn_enabled": torch.backends.cudnn.enabled,
        "fp16_reduced": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "default_dtype": str(torch.get_default_dtype()),
        "grad_enabled": torch.is_grad_enabled(),
    }


def snapshot_integrity() -> dict[str, Any]:
    import time

    ev = torch.cuda.Event
    return {
        "objects": {
            "torch.cuda.Event": ev,
            "torch.cuda.Event.record": ev.__dict__.get("record"),
            "torch.cuda.Event.elapsed_time": ev.__dict__.get("elapsed_time"),
            "torch.cuda.Event.synchronize": ev.__dict__.get("synchronize"),
            "torch.cuda.synchronize": torch.cuda.synchronize,
            "torch.cuda.current_stream": torch.cuda.current_stream,
            "torch.cuda.Stream": torch.cuda.Stream,
            "torch._C._cuda_synchronize": getattr(torch._C, "_cuda_synchronize", None),
            "time.perf_counter": time.perf_counter,
            "time.time": time.time,
            "time.monotonic": time.monotonic,
            "torch.allclose": torch.allclose,
            "torch.equal": torch.equal,
            "torch.Tensor.__eq__": torch.Tensor.__eq__,
            "torch.Tensor.clone": torch.Tensor.clone,
            "torch.nn.Module.__call__": torch.nn.Module.__call__,
        },
        "flags": _flags(),
        "threads": threading.active_count(),
        "patchable": _patchable(),
    }


# Functions the harness's own checks call: a candidate that replaced one could make a wrong output compare equal.
_COMPARE_FUNCS = (
    "isnan",
    "isinf",
    "isfinite",
    "where",
    "zeros_like",
    "allclose",
    "equal",
    "abs",
    "empty_like",
    "full_like",
)


def _patchable() -> dict[str, Any]:
    """Identities of torch.Tensor's Python-level attributes and of the torch functions the checks use."""
    return watched(torch, _COMPARE_FUNCS, (("torch.Tensor", torch.Tensor),))  # a missing function reads None


def integrity_violations(before: dict[str, Any]) -> list[tuple[str, str]]:
    now = snapshot_integrity()
    out = []
    for k, v in before["objects"].items():
        if now["objects"][k] is not v:
            out.append(("timer_patching", f"{k} was replaced"))
    for k, v in before["flags"].items():
        if now["flags"][k] != v:
            name = "precision_cast" if "tf32" in k or "precision" in k or "reduced" in k else "global_state"
            out.append((name, f"{k}: {v} -> {now['flags'][k]}"))
    changed = replaced(torch, before["patchable"], now["patchable"])  # new names too: Tensor.__le__ over the C base
    if changed:
        out.append(("monkey_patching", f"replaced: {', '.join(sorted(changed)[:8])}"))
    if now["threads"] > before["threads"]:
        out.append(("threads_or_processes", f"{now['threads'] - before['threads']} new Python thread(s)"))
    return out
