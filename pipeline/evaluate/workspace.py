"""The CUDA-Agent-style workspace an agent edits (stdlib only).

    model.py                 the task (protected: the reference the solution is judged against)
    model_new.py             the candidate: class ModelNew, calls ops from the compiled module `cuda_extension`
    kernels/<op>.cu          kernels + an extern "C" launcher; no torch headers, so nvcc takes ~1 s
    kernels/<op>_binding.cpp torch binding: checks tensors, allocates outputs, calls the launcher,
                             REGISTER_BINDING(name, fn) adds it to the module
    binding_registry.h       (protected) the registry macro
    binding.cpp              (protected) the module entry point: binds everything registered
    .opforge/manifest.json   (protected) hashes of the protected files written at init

Kernels and bindings are compiled apart (see `build.py`), so editing a kernel recompiles only that kernel.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

EXTENSION_NAME = "cuda_extension"
MANIFEST = ".opforge/manifest.json"

BINDING_REGISTRY_H = r"""// opforge binding registry (protected). Each kernels/<op>_binding.cpp adds its functions with REGISTER_BINDING.
#pragma once
// torch/types.h (tensors, factories, TORCH_CHECK) + torch's pybind casters: a third of torch/extension.h's compile
// time (which also pulls in torch::nn, optim, data, jit). A binding may still include torch/extension.h itself.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <functional>
#include <vector>

namespace opforge {
using BindingFn = std::function<void(pybind11::module_&)>;
inline std::vector<BindingFn>& binding_registry() {
  static std::vector<BindingFn> registry;
  return registry;
}
struct BindingRegistrar {
  explicit BindingRegistrar(BindingFn fn) { binding_registry().push_back(std::move(fn)); }
};
}  // namespace opforge

#define REGISTER_BINDING(name, fn) \
  static ::opforge::BindingRegistrar opforge_registrar_##name([](pybind11::module_& m) { m.def(#name, &fn); });
"""

BINDING_CPP = r"""// opforge module entry point (protected): exposes every function registered with REGISTER_BINDING.
#include "binding_registry.h"

PYBIND11_MODULE(cuda_extension, m) {
  for (auto& bind : opforge::binding_registry()) bind(m);
}
"""

EXAMPLE_KERNEL = r"""// Example kernel: replace with your own. No torch headers here, so nvcc compiles this file in about a second.
#include <cuda_runtime.h>

__global__ void identity_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

extern "C" void launch_identity(const float* x, float* y, long n, cudaStream_t stream) {
  int threads = 256;
  long blocks = (n + threads - 1) / threads;
  identity_kernel<<<blocks, threads, 0, stream>>>(x, y, n);
}
"""

EXAMPLE_BINDING = r"""// Example binding: checks inputs, allocates the output, launches on torch's current stream.
#include "../binding_registry.h"
#include <c10/cuda/CUDAStream.h>

extern "C" void launch_identity(const float* x, float* y, long n, cudaStream_t stream);

torch::Tensor identity_forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  launch_identity(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(), c10::cuda::getCurrentCUDAStream());
  return y;
}

REGISTER_BINDING(identity_forward, identity_forward)
"""

MODEL_NEW_TEMPLATE = r"""import torch
import torch.nn as nn

import cuda_extension  # built from kernels/ by the harness


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return cuda_extension.identity_forward(x)
"""

# Files whose content the harness owns. model.py is compared with the task, the rest with the templates above.
PROTECTED_FILES = ("model.py", "binding.cpp", "binding_registry.h", MANIFEST)
# Names that would shadow modules the harness or torch imports if they sat next to model_new.py.
SHADOWING_NAMES = {
    "torch.py",
    "torch",
    "numpy.py",
    "numpy",
    "sitecustomize.py",
    "usercustomize.py",
    "conftest.py",
    "typing.py",
    "os.py",
    "sys.py",
    "time.py",
    "random.py",
    "math.py",
    "cuda_extension.py",
    "pipeline",
    "model.py",
}


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def init_workspace(dir: str | Path, task_code: str) -> None:
    """Write the task and the template into `dir` (created if missing; existing candidate files are replaced)."""
    d = Path(dir)
    (d / "kernels").mkdir(parents=True, exist_ok=True)
    (d / ".opforge").mkdir(exist_ok=True)
    files = {
        "model.py": task_code,
        "binding.cpp": BINDING_CPP,
        "binding_registry.h": BINDING_REGISTRY_H,
        "model_new.py": MODEL_NEW_TEMPLATE,
        "kernels/identity.cu": EXAMPLE_KERNEL,
        "kernels/identity_binding.cpp": EXAMPLE_BINDING,
    }
    for rel, text in files.items():
        (d / rel).write_text(text)
    manifest = {"task_sha256": _sha(task_code), "protected": {p: _sha(files[p]) for p in PROTECTED_FILES[:3]}}
    (d / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))


def check_protected(dir: str | Path, task_code: str | None = None) -> list[str]:
    """Violations: protected files changed or missing, and files that would shadow harness imports.

    Harness files are compared with the built-in templates (so a rewritten manifest cannot hide a change); model.py
    with `task_code` when given, else with the manifest's hash. Returns names like
    "protected_file_modified:binding.cpp"; empty when the workspace is intact.
    """
    d = Path(dir)
    out: list[str] = []
    expected = {"binding.cpp": BINDING_CPP, "binding_registry.h": BINDING_REGISTRY_H}
    for rel, text in expected.items():
        p = d / rel
        if not p.is_file():
            out.append(f"protected_file_missing:{rel}")
        elif p.read_bytes() != text.encode():
            out.append(f"protected_file_modified:{rel}")
    model = d / "model.py"
    manifest: dict = {}
    try:
        manifest = json.loads((d / MANIFEST).read_text())
    except (OSError, ValueError):
        out.append(f"protected_file_missing:{MANIFEST}")
    if not model.is_file():
        out.append("protected_file_missing:model.py")
    else:
        want = _sha(task_code) if task_code is not None else manifest.get("task_sha256")
        if want is None or _sha(model.read_bytes()) != want:
            out.append("protected_file_modified:model.py")
        if task_code is not None and manifest and manifest.get("task_sha256") != _sha(task_code):
            out.append(f"protected_file_modified:{MANIFEST}")
    if manifest:
        for rel, h in (manifest.get("protected") or {}).items():
            if rel in expected and h != _sha(expected[rel]):
                out.append(f"protected_file_modified:{MANIFEST}")
                break
    for p in d.iterdir() if d.is_dir() else []:
        if p.name in SHADOWING_NAMES and p.name != "model.py":
            out.append(f"shadowing_file:{p.name}")
    kd = d / "kernels"
    for p in kd.iterdir() if kd.is_dir() else []:
        if p.name in SHADOWING_NAMES:
            out.append(f"shadowing_file:kernels/{p.name}")
    return sorted(set(out))


def is_workspace(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / "model_new.py").is_file()


def solution_files(path: str | Path) -> dict[str, str]:
    """The candidate's own sources, `{relative path: text}`: model_new.py and everything under kernels/ (for a
    workspace), or the single file."""
    p = Path(path)
    if not p.is_dir():
        return {p.name: p.read_text(errors="replace")}
    out = {"model_new.py": (p / "model_new.py").read_text(errors="replace")}
    for f in sorted((p / "kernels").rglob("*")) if (p / "kernels").is_dir() else []:
        if f.is_file() and f.suffix in {".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".py", ".cxx"}:
            out[str(f.relative_to(p))] = f.read_text(errors="replace")
    for f in sorted(p.glob("*.py")):
        if f.name not in {"model.py", "model_new.py"}:
            out[f.name] = f.read_text(errors="replace")
    return out
