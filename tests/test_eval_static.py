"""The static checker: each exploit fixture and each pattern variant gets its violation name; honest code none."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.evaluate.static_check import VIOLATIONS, check_cpp, check_python, check_solution_files, summarize
from pipeline.evaluate.workspace import solution_files

FIX = Path(__file__).resolve().parent / "fixtures" / "kernels"
sys.path.insert(0, str(FIX))
import assemble as A  # noqa: E402


def names(code: str, **kw) -> tuple[list[str], list[str]]:
    return summarize(check_python(textwrap.dedent(code), **kw))


@pytest.mark.parametrize("name", sorted(n for n, v in {**A.EXPLOITS_WS, **A.EXPLOITS_KB}.items() if v[1]))
def test_exploit_fixture_named(name):
    want = {**A.EXPLOITS_WS, **A.EXPLOITS_KB}[name][1]
    violations, _ = summarize(check_python((A.EXPLOITS / f"{name}.py").read_text(), f"{name}.py"))
    assert want in violations, violations


@pytest.mark.parametrize("name", sorted(A.HONEST_WORKSPACES))
def test_honest_workspaces_clean(name, tmp_path):
    ws = A.honest_workspace(tmp_path / name, name)
    violations, warnings = summarize(check_solution_files(solution_files(ws)))
    assert violations == [] and warnings == []


def test_honest_single_file_clean():
    violations, warnings = summarize(check_python((A.HONEST / "add_inline.py").read_text()))
    assert violations == [] and warnings == []


HEADER = "import torch\nimport torch.nn as nn\n"
VARIANTS = {
    # disguised variants of each pattern, as a hidden test set would write them
    "try_except_fallback": "class ModelNew(nn.Module):\n    def forward(self, x):\n        try:\n            return ext.f(x)\n"
    "        except Exception:\n            return x\n",
    "pass_body": "class ModelNew(nn.Module):\n    def forward(self, x):\n        '''doc'''\n        ...\n",
    "threads_or_processes": "from concurrent.futures import ThreadPoolExecutor as P\nclass ModelNew(nn.Module):\n"
    "    def forward(self, x):\n        return ext.f(x)\n",
    "timer_patching": "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n"
    "setattr(torch.cuda, 'synchronize', lambda: None)\n",
    "stream_creation": "from torch.cuda import Stream as S\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.s = torch.cuda.Stream()\n    def forward(self, x):\n"
    "        return ext.f(x)\n",
    "lazy_tensor": "class T(torch.Tensor):\n    pass\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        return ext.f(x)\n",
    "inherits_reference": "from model import Model\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        return Model.forward(self, x)\n",
    "caller_introspection": "import sys as _s\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        return _s._getframe(1).f_locals['ref']\n",
    "dynamic_code": "class ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        return getattr(torch, 'r' + 'elu')(x)\n",
    "io_access": "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.load('cached.pt')\n",
    "torch_compute_op": "import torch.nn.functional as F\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        return F.relu(x)\n",
    "torch_compile": "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.f = torch.compile(lambda x: x)\n    def forward(self, x):\n        return self.f(x)\n",
    "raw_memory_access": "import ctypes\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n",
    "cuda_graph": "class ModelNew(nn.Module):\n    def forward(self, x):\n        g = torch.cuda.CUDAGraph()\n"
    "        return ext.f(x)\n",
}


@pytest.mark.parametrize("want", sorted(VARIANTS))
def test_pattern_variants(want):
    violations, _ = names(HEADER + VARIANTS[want])
    assert want in violations, violations


def test_method_compute_ops_and_exec_in_forward():
    v, _ = names(HEADER + "class ModelNew(nn.Module):\n    def forward(self, x):\n        return (x * 2).relu()\n")
    assert "torch_compute_op" in v
    v, _ = names(
        HEADER + "class ModelNew(nn.Module):\n    def forward(self, x):\n        exec('y=1')\n"
        "        return ext.f(x)\n"
    )
    assert "dynamic_code" in v


def test_comments_and_strings_do_not_trigger():
    code = HEADER + textwrap.dedent("""
        # try: except: import threading; torch.cuda.Stream() -- all in a comment
        DOC = "we never call inspect or gc or torch.cuda.Stream here"

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()

            def forward(self, x):
                return ext.run(x)
        """)
    v, w = names(code)
    assert v == [] and w == []


def test_precision_cast_is_a_warning():
    v, w = names(HEADER + "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x.half())\n")
    assert v == [] and w == ["precision_cast"]
    v, _ = summarize(
        check_python(
            HEADER + "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x.half())\n"
        ),
        warnings_reject=True,
    )
    assert v == ["precision_cast"]


def test_cuda_checks_strip_comments():
    src = (
        "// cudaStreamCreate(&s) in a comment\n/* std::thread t; */\n__global__ void k(float* x) {}\n"
        "void go(float* x) { cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }\n"
    )
    found = check_cpp(src)
    assert {f.name for f in found} == {"stream_creation"} and all(f.line == 4 for f in found)
    assert check_cpp("__global__ void k(const float* a, float* b) { b[0] = a[0]; }\n") == []


def test_l2_persistence_is_rejected_in_every_spelling():
    # An access-policy window marked persisting keeps a kernel's data in L2 through the per-call flush.
    runtime = (
        "void pin(float* w, size_t n, cudaStream_t s) {\n  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n);\n"
        "  cudaStreamAttrValue a = {};\n  a.accessPolicyWindow.base_ptr = w;\n"
        "  a.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;\n"
        "  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &a);\n}\n"
    )
    driver = (
        "void pin(CUstream s) { CUstreamAttrValue v; v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING; }\n"
    )
    libcu = (
        "#include <cuda/annotated_ptr>\n__global__ void k(float* x) {\n"
        "  cuda::annotated_ptr<float, cuda::access_property::persisting> p{x};\n  p[0] = 1.f;\n}\n"
    )
    launch = "void go() { cudaLaunchAttribute at; at.id = cudaLaunchAttributeAccessPolicyWindow; }\n"
    for src in (runtime, driver, libcu, launch):
        assert "l2_persistence" in {f.name for f in check_cpp(src)}, src
        v, _ = summarize(check_cpp(src), False)
        assert "l2_persistence" in v
    # Per-access cache hints are ordinary optimisation and pass.
    hints = "__global__ void k(const float* __restrict__ a, float* b) { b[0] = __ldcs(a) + __ldlu(a + 1); }\n"
    assert check_cpp(hints) == []


def test_direct_library_calls_need_allow_libraries():
    # The op guard closes cuBLAS/cuDNN at dispatch unless allowed; calling them from the binding directly is the
    # same thing and follows the same option.
    gemm = (
        "#include <cublas_v2.h>\n#include <ATen/cuda/CUDAContext.h>\n"
        "void mm(const float* a, const float* b, float* c, int n) {\n"
        "  auto h = at::cuda::getCurrentCUDABlasHandle();\n  float one = 1.f, zero = 0.f;\n"
        "  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n);\n}\n"
    )
    conv = "#include <cudnn.h>\nvoid f() { cudnnHandle_t h; cudnnCreate(&h); }\n"
    files = {"kernels/mm_binding.cpp": gemm, "kernels/conv.cu": conv}
    found = check_solution_files(files)
    assert {f.file for f in found if f.name == "library_call"} == {"kernels/mm_binding.cpp", "kernels/conv.cu"}
    assert summarize(found)[0] == ["library_call"]
    only_blas = check_solution_files(files, allow_libraries=["cublas"])
    assert {f.file for f in only_blas if f.name == "library_call"} == {"kernels/conv.cu"}
    assert [
        f for f in check_solution_files(files, allow_libraries=["cublas", "cudnn"]) if f.name == "library_call"
    ] == []
    # A kernel of one's own that merely mentions the words in a comment or a name passes.
    assert (
        check_cpp("// unlike cublasSgemm(...)\n__global__ void my_cublas_free_gemm(float* c) { c[0] = 0.f; }\n") == []
    )


def test_cuda_in_python_strings_is_checked():
    code = (
        HEADER
        + 'src = """\n#include <torch/extension.h>\nvoid f() { std::thread t([]{}); }\n"""\n'
        + "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n"
    )
    v, _ = names(code)
    assert "threads_or_processes" in v


def test_missing_model_new_and_syntax_error():
    assert names("x = 1\n")[0] == ["no_model_new"]
    assert names("def (:\n")[0] == ["syntax_error"]


def test_every_violation_has_a_severity():
    assert all(sev in ("strict", "warn") for sev, _ in VIOLATIONS.values())


def test_host_compute_and_aten_calls_in_forward():
    v, _ = names(
        HEADER + "import numpy as np\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return torch.from_numpy(np.tanh(x.cpu().numpy())).to(x.device)\n"
    )
    assert "host_compute" in v
    v, _ = names(
        HEADER + "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return torch.ops.aten.relu.default(x)\n"
    )
    assert "torch_compute_op" in v


def test_operators_called_past_the_dispatcher_front_and_dispatch_key_probes():
    """Ways around the op guard: an operator's redispatch entry (skips the Python dispatch key the guard sits on),
    at::_ops directly, underscore and _out variants, and probing the guard's dispatch key to tell guarded calls
    from timed ones."""
    for src in (
        "auto y = at::_ops::_softmax::redispatch(ks, x, 1, false);",
        "auto y = at::_ops::mm::call(a, b);",
        "auto y = at::_softmax(x, 1, false);",
        "at::mm_out(o, a, b);",
        "auto y = at :: matmul (a, b);",
    ):
        assert "torch_compute_op" in {f.name for f in check_cpp(src)}, src
    probe = "bool g = c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::Python);"
    assert {f.name for f in check_cpp(probe)} == {"caller_introspection"}
    assert check_cpp("auto o = torch::empty_like(x);\nauto p = at::empty({n}, x.options());") == []
    py = HEADER + (
        "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        ks = torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA)\n"
        "        return torch.ops.aten._softmax.default.redispatch(ks, x, -1, False)\n"
    )
    violations, _ = names(py)
    assert "torch_compute_op" in violations and "caller_introspection" in violations, violations
    probe_py = HEADER + (
        "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        if torch._C._dispatch_tls_is_dispatch_key_included(torch._C.DispatchKey.Python):\n"
        "            return ext.slow(x)\n        return ext.fast(x)\n"
    )
    assert "caller_introspection" in names(probe_py)[0]


# Honest idioms of third-party KernelBench solutions that were rejected (a sweep of 60 realistic files), each beside
# the dishonest form the same rule must still name.
_EXT = (
    "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
    "ext = load_inline(name='k', cpp_sources='', cuda_sources='', functions=['relu', 'softmax', 'add'])\n"
)
HONEST_IDIOMS = {
    "view functions": "class ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        x = torch.flatten(x, 1)\n        a, b = torch.chunk(torch.unsqueeze(x, 0), 2, dim=-1)\n"
    "        return ext.add(torch.transpose(a, 0, 1), torch.reshape(b, a.shape))\n",
    "local alias of an extension": "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.k = ext\n    def forward(self, a, b):\n        k = self.k\n        return k.add(a, b)\n",
    "lazy loader": "def _ext():\n    return load_inline(name='k2', cpp_sources='', functions=['softmax'])\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return _ext().softmax(x)\n",
    "extensions in a dict": "KERNELS = {'act': load_inline(name='k3', cpp_sources='', functions=['relu'])}\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return KERNELS['act'].relu(x)\n",
    "extensions in a list on self": "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.exts = [ext]\n    def forward(self, x):\n        return self.exts[0].relu(x)\n",
    "annotated extension": "from types import ModuleType\n"
    "mod: ModuleType = load_inline(name='k4', cpp_sources='', functions=['relu'])\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return mod.relu(x)\n",
    "numpy on a shape": "import numpy as np\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        n = int(np.prod(x.shape[1:]))\n        return ext.relu(x.view(-1, n))\n",
    "pathlib build folder": "from pathlib import Path\nBUILD = Path('/tmp') / 'k5'\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.relu(x)\n",
    "a context manager that lets exceptions through": "class Timer:\n    def __enter__(self):\n        return self\n"
    "    def __exit__(self, *exc):\n        return False\n"
    "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.dtype = torch.float32\n    def forward(self, x):\n        with Timer():\n            return ext.relu(x)\n",
    "docstring naming torch's C++": "class ModelNew(nn.Module):\n"
    '    """Faster than at::softmax(x, 1) and x.sum(-1), in one pass."""\n'
    "    def forward(self, x):\n        return ext.softmax(x)\n",
}
DISHONEST_TWINS = {
    "torch_compute_op": [
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fast = torch.softmax\n    def forward(self, x):\n        return self.fast(x, -1)\n",
        "import torch.nn.functional as F\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.ops = [F.gelu]\n    def forward(self, x):\n        return self.ops[0](x)\n",
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.mm = getattr(torch, 'matmul')\n    def forward(self, a, b):\n        return self.mm(a, b)\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.relu()\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        y = x * 2\n        return y.sum(1)\n",
        "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return (a + b).softmax(1)\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.float().softmax(-1)\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.cat([x, x]).sum(0)\n",
    ],
    # telling guarded calls from timed ones by a swallowed error's traceback, with torch's ops kept on self
    "try_except_fallback": [
        "class P:\n    def __enter__(self):\n        return self\n    def __exit__(self, k, v, tb):\n"
        "        self.tb = tb\n        return True\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        with P():\n            torch.empty(-1)\n"
        "        return ext.relu(x)\n"
    ],
    "caller_introspection": [
        "class ModelNew(nn.Module):\n    def forward(self, x, tb=None):\n        n = 0\n        while tb is not None:\n"
        "            n, tb = n + 1, tb.tb_next\n        return ext.relu(x)\n"
    ],
    "host_compute": [
        "import numpy as np\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return torch.as_tensor(np.exp(x.shape and x.cpu()))\n",
        "import numpy as np\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return np.sum(x)\n",
        "import numpy as np\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return torch.as_tensor(np.exp(x.shape and x))\n",
    ],
    "io_access": [
        "from pathlib import Path\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return ext.relu(x) + float(Path('/tmp/o').read_text())\n",
        "import pathlib\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return ext.relu(x) + float(list(map(pathlib.Path.read_text, [pathlib.Path('/tmp/o')]))[0])\n",
    ],
    "dynamic_code": [
        "from types import FunctionType\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return ext.relu(x)\n"
    ],
    # a docstring is checked as code for everything but torch calls (it may be code, read through __doc__)
    "stream_creation": [
        "class ModelNew(nn.Module):\n"
        '    """__global__ void k() {}\n    cudaStream_t s; cudaStreamCreate(&s); // a side stream"""\n'
        "    def forward(self, x):\n        return ext.relu(x)\n"
    ],
}


@pytest.mark.parametrize("idiom", sorted(HONEST_IDIOMS))
def test_honest_idioms_pass(idiom):
    violations, _ = names(_EXT + HONEST_IDIOMS[idiom])
    assert violations == [], (idiom, violations)


@pytest.mark.parametrize("rule,i", [(r, i) for r, codes in sorted(DISHONEST_TWINS.items()) for i in range(len(codes))])
def test_dishonest_twins_still_named(rule, i):
    violations, _ = names(_EXT + DISHONEST_TWINS[rule][i])
    assert rule in violations, violations


def test_cuda_structs_and_messages_are_not_torch_calls():
    """A Welford accumulator's `.add()`, a packed vector's `.sum()`, a TORCH_CHECK message naming a torch call: none
    is one; torch's functions called in C++ still are (a tensor method in C++ is caught by the op guard at dispatch)."""
    honest = """
    struct Welford { float m, s; int n; __device__ void add(float v) { n++; float d = v - m; m += d / n; s += d * (v - m); } };
    __global__ void k(const float4* x, float* y) { Welford w{}; float4 v = x[threadIdx.x]; w.add(v.x); y[0] = w.m; }
    torch::Tensor f(torch::Tensor x) {
        TORCH_CHECK(x.is_cuda(), "x.sum(-1) must be 1: use at::softmax(x, 1) first");
        auto y = torch::empty({1}, x.options()); return y; }
    """
    assert [f.name for f in check_cpp(textwrap.dedent(honest))] == []
    assert [f.name for f in check_cpp("auto y = at::softmax(x, 1);")] == ["torch_compute_op"]
    assert [f.name for f in check_cpp('auto y = torch::sum(x); // "quoted"')] == ["torch_compute_op"]


# Reaching past the op guard from Python: the judge's own modules, torch's internals, a module through another's
# attributes, names looked up by string. Each was a candidate that got reward 1 with the guard switched off or probed.
FORWARD = "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n"
REACH = {
    "harness_module": ("import pipeline.evaluate.guard as g\ng._COMPUTE_NAMESPACES.clear()\n", "internals_access"),
    "harness_from": (
        "from pipeline.evaluate import candidate\ncandidate.Driver.violation = print\n",
        "internals_access",
    ),
    "torch_sys_modules": ("m = torch.sys.modules['pipeline.evaluate.guard']\n", "internals_access"),
    "torch_os": ("torch.os.system('true')\n", "internals_access"),
    "const_getattr_C": ("D = getattr(getattr(torch, '_C'), '_DisableTorchDispatch')\n", "internals_access"),
    "from_C_import": ("from torch._C import _pop_torch_dispatch_stack\n", "internals_access"),
    "from_torch_import_C": ("from torch import _C as c\n", "internals_access"),
    "no_dispatch": ("from torch.utils._mode_utils import no_dispatch\n", "internals_access"),
    "alias_then_private": ("T = torch\nT._C._set_grad_enabled(False)\n", "internals_access"),
    "from_torch_import_compile": ("from torch import compile as jit\n", "torch_compile"),
    "getattr_stream": ("S = getattr(torch.cuda, 'Stream')\n", "stream_creation"),
    "dict_lookup": ("f = torch.__dict__['softmax']\n", "dynamic_code"),
    "attrgetter": ("import operator\nf = operator.attrgetter('soft' + 'max')(torch)\n", "dynamic_code"),
    "load_library": ("torch.ops.load_library('/tmp/x.so')\n", "dynamic_code"),
    "alias_patch": ("T = torch.Tensor\nT.__eq__ = lambda a, b: True\n", "timer_patching"),
    "os_exec": ("import os\nos.execvp('sh', ['sh'])\n", "threads_or_processes"),
    "torch_mp": ("torch.multiprocessing.spawn(print, nprocs=1)\n", "threads_or_processes"),
    "numpy_load": ("import numpy\nw = numpy.load('w.npy')\n", "io_access"),
    # the module passed through a container, a call, a parameter, a loop or a walrus before its private name
    "container": ("m = [torch][0]._C\n", "internals_access"),
    "list_sys_modules": ("import sys\ng = [sys][0].modules['pipeline.evaluate.guard']\n", "caller_introspection"),
    "lambda_default": ("f = (lambda t=torch: t.utils._mode_utils.no_dispatch)()\n", "internals_access"),
    "function_result": ("def u():\n    return torch.utils\nnd = u()._mode_utils\n", "internals_access"),
    "loop": ("for m in (torch,):\n    c = m._C\n", "internals_access"),
    "walrus": ("if (t := torch):\n    c = t._C\n", "internals_access"),
    "getattr_on_expression": ("c = getattr(torch if True else None, '_C')\n", "internals_access"),
    "getattribute": ("c = torch.__getattribute__('_' + 'C')\n", "dynamic_code"),
    "object_getattribute": ("c = object.__getattribute__(torch, 'utils')\n", "dynamic_code"),
    "new_returns_module": ("class G:\n    def __new__(cls):\n        return torch\nc = G()._C\n", "internals_access"),
}


@pytest.mark.parametrize("case", sorted(REACH))
def test_reaching_past_the_guard_is_named(case):
    code, want = REACH[case]
    violations, _ = names(HEADER + code + FORWARD)
    assert want in violations, (case, violations)


def test_numpy_on_sizes_kept_or_computed_in_forward_is_not_host_compute():
    code = HEADER + "import numpy as np\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
    code += "        n = x.numel()\n        s = float(np.sqrt(self.head_dim))\n        g = int(np.ceil(n / 256))\n"
    code += "        return ext.f(x, s, g)\n"
    assert names(code)[0] == []
    assert "host_compute" in names(code.replace("np.sqrt(self.head_dim)", "np.sqrt(x)"))[0]


def test_numpy_names_and_host_copies_in_forward_are_host_compute():
    bare = HEADER + "from numpy import exp\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
    bare += "        return torch.from_numpy(exp(x.numpy()))\n"
    assert "host_compute" in names(bare)[0]
    to_cpu = HEADER + "class ModelNew(nn.Module):\n    def forward(self, x):\n        y = x.to('cpu')\n"
    to_cpu += "        return ext.f(y)\n"
    assert "host_compute" in names(to_cpu)[0]


@pytest.mark.parametrize(
    "idiom",
    [
        # nn.Linear's own initialisation and conv size helpers (private names of torch.nn that module code uses)
        "fan_in, _ = nn.init._calculate_fan_in_and_fan_out(torch.empty(4, 4))\n",
        "from torch.nn.modules.utils import _pair\nk = _pair(3)\n",
        "from torch.nn.common_types import _size_2_t\n",
        # config helpers with comparisons, a lazy loader's __getattr__, prose naming ATen in a message
        "class Cfg:\n    def __eq__(self, o):\n        return True\n    def __getattr__(self, n):\n        return 1\n",
        "MSG = 'ModelNew replaces at::relu(x) with a custom kernel written here'\n",
        "import numpy as np\nn = int(np.prod((2, 3)))\n",
        "class Opts:\n    def __init__(self, **kw):\n        self.__dict__.update(kw)\n",
        # variables named like the judge's packages or stdlib modules, private fields of the solution's objects
        "flows = []\nflows.append(1)\npipeline = {'a': 1}\ntests = pipeline.get('a')\n",
        "class _Stat:\n    def __init__(self):\n        self._count = 0\ndef bump():\n    stat = _Stat()\n"
        "    stat._count += 1\n    return stat._count\n",
        "from torch.nn.modules.batchnorm import _BatchNorm\n",
        "ok = hasattr(torch, '_scaled_mm')\n",
        "mods = list(nn.Linear(2, 2).modules())\n",
        "class L(nn.Linear):\n    def reset(self):\n        super()._load_from_state_dict\n",
    ],
)
def test_reach_rules_leave_honest_module_code_alone(idiom):
    violations, _ = names(HEADER + idiom + FORWARD)
    assert violations == [], violations
