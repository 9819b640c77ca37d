"""The output commitment's leaf hash: the GPU kernel's SHA-256 is hashlib's, its build is sealed, and the digest of a
device tensor hashed on its GPU is the one the trusted side recomputes on the host."""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
import shutil
import subprocess

import pytest
import torch

from pipeline.evaluate import artifacts, leafhash, tensorio

# The kernel's source compiled as host C++: CUDA's built-ins spelled out as their documented semantics, one call per
# "thread". It checks the SHA-256 arithmetic, padding and tails on every machine; the GPU test below checks the
# compiled kernel itself.
SHIM = r"""
#include <cstdint>
#include <cstring>
#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__ static
#define __restrict__
struct dim_ { unsigned x; };
static dim_ blockIdx, blockDim, threadIdx;
struct uint4 { uint32_t x, y, z, w; };
static inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, int n) {
  n &= 31; return n ? (lo >> n) | (hi << (32 - n)) : lo; }
static inline uint32_t __byte_perm(uint32_t x, uint32_t, uint32_t) { return __builtin_bswap32(x); }
static inline uint4 __ldg(const uint4* p) { uint4 v; memcpy(&v, p, 16); return v; }
"""
DRIVER = r"""
extern "C" void run(const uint8_t* d, unsigned long long n, unsigned long long leaf, uint8_t* out) {
  unsigned long long nl = (n + leaf - 1) / leaf;
  blockDim.x = 1;
  for (unsigned long long i = 0; i < nl; i++) {
    blockIdx.x = (unsigned)i; threadIdx.x = 0; opforge_sha256_leaves(d, n, leaf, out, nl); }
}
"""
SIZES = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 128, 4095, 4096, 4097, 3 * 4096 + 77, 100_003]


def _want(data: bytes, leaf: int) -> bytes:
    return b"".join(hashlib.sha256(data[i : i + leaf]).digest() for i in range(0, len(data), leaf))


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_the_kernels_sha256_is_hashlibs_at_every_tail_length(tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(SHIM + leafhash.SOURCE + DRIVER)
    lib = tmp_path / "k.so"
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    run = ctypes.CDLL(str(lib)).run
    rng = random.Random(0)
    for n in SIZES:
        data = rng.randbytes(n)
        buf = ctypes.create_string_buffer(data + bytes(16), n + 16)
        for leaf in (64, tensorio.LEAF_BYTES):
            out = ctypes.create_string_buffer(max(1, 32 * -(-n // leaf)))
            run(buf, ctypes.c_ulonglong(n), ctypes.c_ulonglong(leaf), out)
            assert out.raw[: 32 * -(-n // leaf)] == _want(data, leaf), (n, leaf)


def test_the_host_digest_is_the_sha256_of_each_4kib_leaf():
    """The definition both sides compute: structure tokens, then the leaves' SHA-256 in order."""
    t = torch.arange(3 * 2**20 // 4 + 1234, dtype=torch.int32)
    raw = t.numpy().tobytes()
    want = hashlib.sha256()
    token = f"Tint32{list(t.shape)}".encode()
    want.update(b"%d:" % len(token) + token)
    want.update(_want(raw, tensorio.LEAF_BYTES))
    assert tensorio.digest(t) == want.hexdigest()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_the_kernel_is_built_once_sealed_and_refused_when_changed(tmp_path):
    d, why = leafhash.build(tmp_path, "9.0")
    assert why == "" and os.path.isfile(os.path.join(d, leafhash.IMAGE))
    image = os.path.join(d, leafhash.IMAGE)
    assert artifacts.file_hashes(image) == artifacts.seal(tmp_path, image)
    mtime = os.stat(image).st_mtime_ns
    assert leafhash._build(tmp_path, "9.0", 300) == (d, "")  # built already: not again
    assert os.stat(image).st_mtime_ns == mtime
    with open(image, "ab") as f:
        f.write(b"\0")
    d2, why2 = leafhash._build(tmp_path, "9.0", 300)
    assert d2 == "" and "differs from its build record" in why2
    d3, why3 = leafhash.build(tmp_path, "no arch")
    assert d3 == "" and why3  # the digest falls back to the host: the evaluation does not fail


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_the_gpu_digest_is_the_hosts(tmp_path):
    """Every size and tail above, dtypes, a view at an odd byte offset (copied to an aligned buffer), non-contiguous
    and multi-tensor outputs, 256 MiB: the device hasher's digest is the host's; one changed byte changes it."""
    d, why = leafhash.build(tmp_path, "9.0")
    assert why == "", why
    hasher = leafhash.load(d)
    assert hasher is not None
    rng = random.Random(1)
    for n in SIZES:
        data = rng.randbytes(n)
        t = torch.frombuffer(bytearray(data), dtype=torch.uint8) if n else torch.empty(0, dtype=torch.uint8)
        assert hasher.leaves(t.cuda(), tensorio.LEAF_BYTES) == _want(data, tensorio.LEAF_BYTES), n
    base = torch.randint(0, 256, (8192 + 5,), dtype=torch.uint8, device="cuda")
    odd = base[1:]  # data_ptr % 16 == 1
    assert hasher.leaves(odd, tensorio.LEAF_BYTES) == _want(odd.cpu().numpy().tobytes(), tensorio.LEAF_BYTES)
    outs = [
        torch.randn(64 * 2**20, device="cuda"),  # 256 MiB
        torch.randn(1000, 333, device="cuda", dtype=torch.float16).t(),
        (torch.rand(7, 5, device="cuda") > 0.5, torch.arange(11, device="cuda"), 2.5),
    ]
    tensorio.use_device_hasher(d)
    assert tensorio._device_hasher is not None
    for out in outs:
        host = tensorio.tmap(out, lambda x: x.cpu())
        assert tensorio.digest(out) == tensorio.digest(host)
    big = outs[0].clone()
    big.view(torch.uint8)[-1] ^= 1
    assert tensorio.digest(big) != tensorio.digest(outs[0])
