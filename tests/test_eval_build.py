"""Workspace format, protected files, and the content-addressed build cache with the real nvcc and g++."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from pipeline.evaluate.build import compile_solution, gencode_flags, trim_log
from pipeline.evaluate.workspace import (
    BINDING_CPP,
    PROTECTED_FILES,
    check_protected,
    init_workspace,
    is_workspace,
    solution_files,
)

FIX = Path(__file__).resolve().parent / "fixtures" / "kernels"
sys.path.insert(0, str(FIX))
import assemble as A  # noqa: E402

TASK = A.task_code("vec_add")


def test_init_workspace_layout(tmp_path):
    init_workspace(tmp_path / "ws", TASK)
    ws = tmp_path / "ws"
    for rel in (
        "model.py",
        "model_new.py",
        "binding.cpp",
        "binding_registry.h",
        "kernels/identity.cu",
        "kernels/identity_binding.cpp",
        ".opforge/manifest.json",
    ):
        assert (ws / rel).is_file(), rel
    assert (ws / "model.py").read_text() == TASK
    assert is_workspace(ws) and set(PROTECTED_FILES) >= {"model.py", "binding.cpp", "binding_registry.h"}
    assert "REGISTER_BINDING" in (ws / "binding_registry.h").read_text()
    assert json.loads((ws / ".opforge/manifest.json").read_text())["task_sha256"]
    assert check_protected(ws) == [] and check_protected(ws, TASK) == []
    assert set(solution_files(ws)) == {"model_new.py", "kernels/identity.cu", "kernels/identity_binding.cpp"}


def test_protected_file_detection(tmp_path):
    ws = tmp_path / "ws"
    init_workspace(ws, TASK)
    (ws / "model.py").write_text(TASK.replace("a + b", "a * 0"))
    (ws / "binding.cpp").write_text(BINDING_CPP + "// edit\n")
    (ws / "torch.py").write_text("")
    v = check_protected(ws, TASK)
    assert {
        "protected_file_modified:model.py",
        "protected_file_modified:binding.cpp",
        "shadowing_file:torch.py",
    } <= set(v)
    # Rewriting the manifest to match the edited task does not hide the change from the real task text.
    man = json.loads((ws / ".opforge/manifest.json").read_text())
    import hashlib

    man["task_sha256"] = hashlib.sha256((ws / "model.py").read_bytes()).hexdigest()
    (ws / ".opforge/manifest.json").write_text(json.dumps(man))
    assert "protected_file_modified:model.py" in check_protected(ws, TASK)
    (ws / "binding_registry.h").unlink()
    assert "protected_file_missing:binding_registry.h" in check_protected(ws)


def test_gencode_and_trim():
    assert gencode_flags("9.0") == ["-gencode=arch=compute_90,code=sm_90"]
    assert gencode_flags("8.0;9.0+PTX")[-1] == "-gencode=arch=compute_90,code=compute_90"
    log = "\n".join(f"line {i}" for i in range(2000)) + "\nfoo.cu(3): error: identifier x is undefined\n"
    t = trim_log(log, 1000)
    assert len(t) <= 1100 and "error: identifier x is undefined" in t


def test_build_cache_and_object_reuse(tmp_path):
    """Cold build, cache hit (nothing built), and a changed kernel that reuses the binding objects (nvcc + link
    only)."""
    cache = A.shared_cache_dir()
    ws = A.honest_workspace(tmp_path / "ws", "add_vec4")
    kernel = ws / "kernels" / "add.cu"
    first = compile_solution(ws, cache, arch_list="9.0")
    assert first.ok, first.log
    assert Path(first.artifact).is_file() and first.artifact.endswith("cuda_extension.so")
    hit = compile_solution(ws, cache, arch_list="9.0")
    assert hit.ok and hit.cached and not hit.objects_built and hit.artifact == first.artifact
    kernel.write_text(kernel.read_text() + f"\n// changed {time.time_ns()}\n")
    changed = compile_solution(ws, cache, arch_list="9.0")
    assert changed.ok and not changed.cached
    assert changed.objects_built == ["kernels/add.cu"]
    assert set(changed.objects_reused) == {"binding.cpp", "kernels/add_binding.cpp"}
    assert set(changed.step_seconds) == {"kernels/add.cu", "link"}
    assert changed.artifact != first.artifact
    # another arch is another cache key
    assert not compile_solution(ws, cache, arch_list="8.0").cached


def test_header_change_rebuilds_its_includers(tmp_path):
    cache = A.shared_cache_dir()
    ws = A.honest_workspace(tmp_path / "ws", "add_vec4")
    (ws / "kernels" / "common.cuh").write_text("#define OPFORGE_SCALE 1.0f\n")
    k = ws / "kernels" / "add.cu"
    k.write_text('#include "common.cuh"\n' + k.read_text())
    a = compile_solution(ws, cache, arch_list="9.0")
    assert a.ok and a.objects_built == ["kernels/add.cu"]
    (ws / "kernels" / "common.cuh").write_text("#define OPFORGE_SCALE 2.0f\n")
    b = compile_solution(ws, cache, arch_list="9.0")
    assert b.ok and b.objects_built == ["kernels/add.cu"] and "kernels/add_binding.cpp" in b.objects_reused


def test_compile_error_is_captured_and_trimmed(tmp_path):
    cache = A.shared_cache_dir()
    ws = A.honest_workspace(tmp_path / "ws", "add_vec4")
    k = ws / "kernels" / "add.cu"
    k.write_text(k.read_text().replace("x.x + y.x", "x.x + undefined_symbol_q"))
    r = compile_solution(ws, cache, arch_list="9.0")
    assert not r.ok and r.reason == "compile_error" and not r.artifact
    assert "undefined_symbol_q" in r.log and "kernels/add.cu" in r.log and len(r.log) <= 4100


def test_missing_and_empty_solutions(tmp_path):
    assert compile_solution(tmp_path / "nope", tmp_path / "c").reason == "no_solution"
    ws = tmp_path / "ws"
    init_workspace(ws, TASK)
    for f in (ws / "kernels").iterdir():
        f.unlink()
    assert compile_solution(ws, tmp_path / "c").reason == "no_kernels"


@pytest.mark.skipif(__import__("torch").version.cuda is not None, reason="CPU-only torch behaviour")
def test_single_file_needs_cuda_torch(tmp_path):
    r = compile_solution(A.HONEST / "add_inline.py", tmp_path / "c")
    assert not r.ok and r.reason == "needs_cuda_torch" and r.kind == "single_file"


def test_built_extension_loads_and_runs(tmp_path):
    """End to end on the CPU: nvcc object + binding object + registry + link -> `import cuda_extension` works and
    computes. (The host-side function in the .cu stands in for a kernel launcher, so no GPU is needed.)"""
    import subprocess

    ws = tmp_path / "ws"
    init_workspace(ws, TASK)
    for f in (ws / "kernels").iterdir():
        f.unlink()
    (ws / "kernels" / "host_add.cu").write_text(
        'extern "C" void host_add(const float* a, const float* b, float* out, long n) {\n'
        "  for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];\n}\n"
    )
    (ws / "kernels" / "host_add_binding.cpp").write_text(
        '#include "../binding_registry.h"\n'
        'extern "C" void host_add(const float* a, const float* b, float* out, long n);\n'
        "torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {\n"
        '  TORCH_CHECK(a.sizes() == b.sizes(), "shape mismatch");\n'
        "  auto ac = a.contiguous(), bc = b.contiguous();\n"
        "  auto out = torch::empty_like(ac);\n"
        "  host_add(ac.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), ac.numel());\n"
        "  return out;\n}\n"
        "REGISTER_BINDING(add_forward, add_forward)\n"
    )
    r = compile_solution(ws, A.shared_cache_dir(), arch_list="9.0")
    assert r.ok, r.log
    code = (
        "import sys, torch\nsys.path.insert(0, sys.argv[1])\nimport cuda_extension as m\n"
        "a, b = torch.randn(1000), torch.randn(1000)\nassert torch.equal(m.add_forward(a, b), a + b)\n"
        "try:\n    m.add_forward(a, torch.randn(3))\nexcept RuntimeError as e:\n    print('raised', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(r.artifact).parent)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "shape mismatch" in out.stdout


# A launcher written the way KernelBench solutions are (extension.h, dispatch macros, factories, options).
_SLIM_CU = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

template <typename scalar_t>
__global__ void scale_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ out, float s, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<scalar_t>(static_cast<float>(x[i]) * s);
}

torch::Tensor scale(torch::Tensor x, double s) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor, got ", x.device());
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  auto extra = torch::zeros({1}, x.options().dtype(torch::kFloat32));
  (void)extra;
  int64_t n = xc.numel();
  cudaStream_t stream = 0;  // c10/cuda's stream headers need a CUDA build of torch; the GPU suite covers them
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(xc.scalar_type(), "scale", [&] {
    scale_kernel<scalar_t><<<(n + 255) / 256, 256, 0, stream>>>(xc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                                                                (float)s, n);
  });
  return out;
}
"""


def _nvcc_torch_flags() -> list[str]:
    import sysconfig

    import torch.utils.cpp_extension as cpp

    return [f"-I{d}" for d in [*cpp.include_paths(), sysconfig.get_paths()["include"]]] + [
        "-DTORCH_EXTENSION_NAME=slim_test",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        "--expt-relaxed-constexpr",
        *gencode_flags("9.0"),
        "--compiler-options",
        "-fPIC",
        "-std=c++17",
    ]


def test_slim_headers_compile_a_kernelbench_style_launcher(tmp_path):
    """What nvcc reads with the slim include dir first (real nvcc): <torch/extension.h> is <torch/types.h> alone (no
    pybind11, no C++ frontend modules), and a launcher written against extension.h's usual API still compiles."""
    import os
    import subprocess

    from pipeline.evaluate.build import slim_include_dir

    slim = slim_include_dir(tmp_path / "cache")
    env = {**os.environ, "NVCC_PREPEND_FLAGS": f"-I{slim}"}
    cu = tmp_path / "k.cu"
    cu.write_text("#include <torch/types.h>\n" + _SLIM_CU)
    pre = subprocess.run(
        ["nvcc", *_nvcc_torch_flags(), "-E", "-x", "cu", str(cu)], env=env, capture_output=True, text=True
    )
    assert pre.returncode == 0, pre.stderr[-2000:]
    assert str(slim) in pre.stdout and "pybind11/pybind11.h" not in pre.stdout
    assert "torch/nn/modules" not in pre.stdout
    full = subprocess.run(["nvcc", *_nvcc_torch_flags(), "-E", "-x", "cu", str(cu)], capture_output=True, text=True)
    assert full.returncode == 0 and "torch/nn/modules" in full.stdout  # the real header brings them
    built = subprocess.run(
        ["nvcc", *_nvcc_torch_flags(), "-O3", "-c", str(cu), "-o", str(tmp_path / "k.o")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "k.o").stat().st_size > 0


def test_a_compiler_bomb_meets_the_build_memory_limit(tmp_path):
    """A kernel written to exhaust the compiler (a 1 GiB initialized device array: unlimited, nvcc ran 188 s and
    GiBs) ends as a compile error once its address space reaches `memory_mb`; the caller goes on."""
    ws = A.honest_workspace(tmp_path / "ws", "add_vec4")
    (ws / "kernels" / "big.cu").write_text(
        "__device__ char big[1u << 30] = {1};\n"
        "__global__ void opforge_big(char* o) { o[threadIdx.x] = big[threadIdx.x * 4096]; }\n"
    )
    r = compile_solution(ws, tmp_path / "cache", arch_list="9.0", memory_mb=2048)
    assert not r.ok and r.reason == "compile_error" and not r.artifact
    assert "out of memory" in r.log.lower() or "bad_alloc" in r.log, r.log[-2000:]
