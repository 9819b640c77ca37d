"""The checks on what a build links to (`pipeline.evaluate.symbols`), on real shared objects made by g++: names the
source checks cannot see through macros, token pasting, namespace aliases or function pointers."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.evaluate import symbols
from pipeline.evaluate.harness import binary_review
from pipeline.evaluate.options import resolve

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None, reason="needs g++, nm")

HONEST = r"""
#include <cstdio>
#include <cstring>
#include <mutex>
static std::mutex m;
extern "C" int add(const float* a, const float* b, float* out, int n) {
  std::lock_guard<std::mutex> g(m);
  for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
  fprintf(stderr, "done %d\n", n);
  return 0;
}
"""

# Each hides the name from a text search: a macro, token pasting, an alias, a function pointer.
DISHONEST = {
    "aten_direct": (
        "namespace at { struct Tensor; namespace cpu {\n"
        "Tensor& _softmax_out(Tensor&, const Tensor&, long, bool); } }\n"
        "namespace A = at::cpu;\n#define K(x) x##_out\n"
        'extern "C" void* f(at::Tensor& o, const at::Tensor& x) {\n'
        "  return (void*)&A::K(_softmax)(o, x, 1, false); }\n",
        "torch_compute_op",
    ),
    "at_cuda_gemm": (
        "namespace at { namespace cuda { namespace blas { template <typename T>\n"
        "void gemm(char, char, long, long, long, T, const T*, long, const T*, long, T, T*, long); } } }\n"
        'extern "C" void f(float* a) {\n'
        "  at::cuda::blas::gemm<float>('n', 'n', 1, 1, 1, 1.f, a, 1, a, 1, 0.f, a, 1); }\n",
        "library_call",
    ),
    "cublas_pointer": (
        '#define LIB(x) cu##blas##x\nextern "C" int LIB(Sgemm_v2)(void*);\n'
        'extern "C" void* f() { auto p = &LIB(Sgemm_v2); return (void*)p; }\n',
        "library_call",
    ),
    "mode_probe": (
        "namespace c10 { namespace impl { bool dispatch_mode_enabled(); } }\n"
        'extern "C" int f() { return c10::impl::dispatch_mode_enabled() ? 1 : 0; }\n',
        "caller_introspection",
    ),
    "raw_dispatch_key_set": (
        "namespace c10 { namespace impl { struct PODLocalDispatchKeySet { unsigned long a, b; };\n"
        "extern thread_local PODLocalDispatchKeySet raw_local_dispatch_key_set; } }\n"
        'extern "C" void f() { c10::impl::raw_local_dispatch_key_set.b = 0; }\n',
        "caller_introspection",
    ),
    "dispatcher_lookup": (
        "namespace c10 { struct Dispatcher { static Dispatcher& realSingleton(); }; }\n"
        'extern "C" void* f() { return &c10::Dispatcher::realSingleton(); }\n',
        "torch_compute_op",
    ),
    "r_debug_walk": (
        '#include <link.h>\nextern "C" void* f() { return _r_debug.r_map; }\n',
        "dynamic_code",
    ),
    "dlsym": (
        '#include <dlfcn.h>\nextern "C" void* f() { return dlsym(RTLD_DEFAULT, "cublasSgemm_v2"); }\n',
        "dynamic_code",
    ),
    "static_initializer_reads_files": (
        "#include <cstdio>\n"
        'static int x = [](){ FILE* f = fopen("/proc/self/environ", "r"); return f ? 1 : 0; }();\n'
        'extern "C" int f() { return x; }\n',
        "io_access",
    ),
    "thread": (
        '#include <thread>\nusing namespace std;\nextern "C" void f() { thread t([]{}); t.join(); }\n',
        "threads_or_processes",
    ),
    "inline_syscall": (
        'extern "C" long f() { long r;\n'
        '  asm volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory"); return r; }\n',
        "raw_memory_access",
    ),
}


def build(tmp: Path, name: str, src: str) -> Path:
    cpp = tmp / f"{name}.cpp"
    cpp.write_text(src)
    so = tmp / f"{name}.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", "-o", str(so), str(cpp)], check=True, capture_output=True)
    return so


def test_an_honest_binary_has_no_findings(tmp_path):
    assert symbols.check_binary(build(tmp_path, "honest", HONEST)) == []


@pytest.mark.parametrize("case", sorted(DISHONEST))
def test_what_a_binary_links_to_is_named(tmp_path, case):
    src, want = DISHONEST[case]
    found = {f.name for f in symbols.check_binary(build(tmp_path, case, src))}
    assert want in found, (case, found)


def test_libraries_allowed_by_the_options_pass_and_artifact_dirs_are_walked(tmp_path):
    ext = tmp_path / "ext" / "my_ext"
    ext.mkdir(parents=True)
    build(ext, "my_ext", DISHONEST["cublas_pointer"][0])
    (ext / "not_elf.so").write_text("not a binary")  # cannot be loaded as an extension: nothing to check
    violations, _, findings = binary_review(str(tmp_path / "ext"), resolve({}))
    assert violations == ["library_call"] and "cublas" in findings[0].detail
    violations, _, _ = binary_review(str(tmp_path / "ext"), resolve({"allow_libraries": ["cublas"]}))
    assert violations == []


def test_compute_ops_called_from_cpp_are_named_whatever_the_dispatch_keys(tmp_path):
    """`x.softmax(1)` in C++ under a guard that excludes the Python key never reaches the op guard; what the binary
    links to still names it. Allocation and views (what honest bindings call) pass."""
    decl = "namespace at { namespace _ops { struct %s { static void call(); }; } }\n"
    src = decl % "softmax_int" + decl % "empty_memory_format" + decl % "view_dtype" + decl % "swapaxes"
    src += 'extern "C" void f() { at::_ops::softmax_int::call(); }\n'
    src += 'extern "C" void g() { at::_ops::empty_memory_format::call(); at::_ops::view_dtype::call(); }\n'
    src += 'extern "C" void h() { at::_ops::swapaxes::call(); }\n'  # a view the guard sees as one
    findings = symbols.check_binary(build(tmp_path, "ops", src))
    assert [f.name for f in findings] == ["torch_compute_op"] and "softmax_int" in findings[0].detail
    honest = decl % "empty_memory_format" + 'extern "C" void g() { at::_ops::empty_memory_format::call(); }\n'
    assert symbols.check_binary(build(tmp_path, "alloc", honest)) == []


def test_the_harness_checks_the_binary_before_anything_loads_it(tmp_path):
    """`evaluate` with a build whose binary calls cuBLAS through a pasted name: the source is clean, the verdict is
    a static violation naming the library, and no process of the judge starts."""
    from pipeline.evaluate.build import CompileResult
    from pipeline.evaluate.harness import evaluate

    ext = tmp_path / "ext" / "opforge_lib"
    ext.mkdir(parents=True)
    build(ext, "opforge_lib", DISHONEST["cublas_pointer"][0])
    sol = tmp_path / "sol.py"
    sol.write_text(
        "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return x\n"
    )
    task = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    task += "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n"
    cr = CompileResult(True, 0.0, "", True, str(tmp_path / "ext"), "single_file")
    res = evaluate(
        task, str(sol), mode="verify", settings={"device": "cpu", "cache_dir": str(tmp_path / "c")}, compile_result=cr
    )
    assert res.reason == "static_violation" and res.violations == ["library_call"], (res.reason, res.violations)
    assert any("cublasSgemm_v2" in f["detail"] for f in res.details["static"])


def test_what_the_cuda_runtime_itself_calls_is_not_the_candidates(tmp_path):
    """nvcc links the CUDA runtime into every extension, and it calls open() and syscall(): not named."""
    src = HONEST + "#include <fcntl.h>\n#include <unistd.h>\n#include <sys/syscall.h>\n"
    src += 'extern "C" long g() { int fd = open("/dev/null", O_RDONLY); return syscall(SYS_getpid) + fd; }\n'
    assert symbols.check_binary(build(tmp_path, "runtime_like", src)) == []


def test_registering_ones_own_ops_is_not_an_operator_lookup(tmp_path):
    """TORCH_LIBRARY / m.def / m.impl (an honest binding's own ops) link torch::Library and torch::jit::parseSchema
    (seen in a g++ build against torch's headers): not named."""
    src = "#include <string>\nnamespace torch { namespace jit { void parseSchema(const std::string&); }\n"
    src += "struct Library { void _def(const char*); }; }\n"
    src += 'extern "C" void f(torch::Library& m) { torch::jit::parseSchema("my_add(Tensor a) -> Tensor"); '
    src += 'm._def("my_add"); }\n'
    assert symbols.check_binary(build(tmp_path, "own_ops", src)) == []
