"""SHA-256 of a device tensor's 4 KiB leaves on the GPU: the output commitment without copying the output to the host.

Every timed call commits its output by a digest (`tensorio.digest`: SHA-256 over the structure and over the SHA-256
of each `tensorio.LEAF_BYTES` leaf of every tensor's bytes). Computed on the host, a 256 MiB output cost 36-95 ms of
copy and hashing per call on the H200's host, 300-900 times the kernels being timed, under the GPU's exclusive lock.
Here each GPU thread hashes one leaf (standard SHA-256, FIPS 180-4), and only the leaf digests (32 bytes per 4 KiB)
cross to the host. The digest is the same bytes either way, so the trusted side checks a kept output by hashing its
file with hashlib: nothing computed here is believed (the candidate's process runs it, and may run anything else).

Trusted side: `build()` compiles the kernel once per source, nvcc and architecture into the cache (flocked, sealed
like a candidate's build), and the jail mounts its directory read-only. Candidate side: `load()` (torch + stdlib).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

SOURCE = r"""
#include <cstdint>

__constant__ uint32_t K[64] = {
  0x428a2f98u,0x71374491u,0xb5c0fbcfu,0xe9b5dba5u,0x3956c25bu,0x59f111f1u,0x923f82a4u,0xab1c5ed5u,
  0xd807aa98u,0x12835b01u,0x243185beu,0x550c7dc3u,0x72be5d74u,0x80deb1feu,0x9bdc06a7u,0xc19bf174u,
  0xe49b69c1u,0xefbe4786u,0x0fc19dc6u,0x240ca1ccu,0x2de92c6fu,0x4a7484aau,0x5cb0a9dcu,0x76f988dau,
  0x983e5152u,0xa831c66du,0xb00327c8u,0xbf597fc7u,0xc6e00bf3u,0xd5a79147u,0x06ca6351u,0x14292967u,
  0x27b70a85u,0x2e1b2138u,0x4d2c6dfcu,0x53380d13u,0x650a7354u,0x766a0abbu,0x81c2c92eu,0x92722c85u,
  0xa2bfe8a1u,0xa81a664bu,0xc24b8b70u,0xc76c51a3u,0xd192e819u,0xd6990624u,0xf40e3585u,0x106aa070u,
  0x19a4c116u,0x1e376c08u,0x2748774cu,0x34b0bcb5u,0x391c0cb3u,0x4ed8aa4au,0x5b9cca4fu,0x682e6ff3u,
  0x748f82eeu,0x78a5636fu,0x84c87814u,0x8cc70208u,0x90befffau,0xa4506cebu,0xbef9a3f7u,0xc67178f2u};

__device__ __forceinline__ uint32_t rotr(uint32_t x, int n) { return __funnelshift_r(x, x, n); }

__device__ __forceinline__ void compress(uint32_t s[8], uint32_t w[16]) {
  uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma unroll
  for (int i = 0; i < 64; i++) {
    uint32_t wi;
    if (i < 16) {
      wi = w[i];
    } else {
      uint32_t w15 = w[(i - 15) & 15], w2 = w[(i - 2) & 15];
      uint32_t s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >> 3);
      uint32_t s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >> 10);
      wi = w[i & 15] = w[i & 15] + s0 + w[(i - 7) & 15] + s1;
    }
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + wi;
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  s[0] += a; s[1] += b; s[2] += c; s[3] += d; s[4] += e; s[5] += f; s[6] += g; s[7] += h;
}

__device__ __forceinline__ uint32_t be(uint32_t x) { return __byte_perm(x, 0, 0x0123); }

// One thread per leaf. data: 16-byte aligned, leaf: a multiple of 64 (the caller checks both).
extern "C" __global__ void opforge_sha256_leaves(const uint8_t* __restrict__ data, unsigned long long n,
                                                 unsigned long long leaf, uint8_t* __restrict__ out,
                                                 unsigned long long nleaves) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nleaves) return;
  unsigned long long off = i * leaf, len = n - off < leaf ? n - off : leaf;
  uint32_t s[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
  uint32_t w[16];
  unsigned long long full = len / 64;
  for (unsigned long long blk = 0; blk < full; blk++) {
    const uint4* p = reinterpret_cast<const uint4*>(data + off + blk * 64);
#pragma unroll
    for (int q = 0; q < 4; q++) {
      uint4 v = __ldg(p + q);
      w[4 * q] = be(v.x); w[4 * q + 1] = be(v.y); w[4 * q + 2] = be(v.z); w[4 * q + 3] = be(v.w);
    }
    compress(s, w);
  }
  // the rest of the leaf, the 0x80 byte and the bit length (FIPS 180-4 padding): one or two blocks
  unsigned r = (unsigned)(len - full * 64);
  uint32_t t[32];
#pragma unroll
  for (int j = 0; j < 32; j++) t[j] = 0;
  const uint8_t* tail = data + off + full * 64;
  for (unsigned j = 0; j < r; j++) t[j >> 2] |= (uint32_t)tail[j] << (24 - 8 * (j & 3));
  t[r >> 2] |= 0x80u << (24 - 8 * (r & 3));
  int nb = r < 56 ? 1 : 2;
  unsigned long long bits = len * 8ull;
  t[nb * 16 - 2] = (uint32_t)(bits >> 32);
  t[nb * 16 - 1] = (uint32_t)bits;
  for (int j = 0; j < 16; j++) w[j] = t[j];
  compress(s, w);
  if (nb == 2) {
    for (int j = 0; j < 16; j++) w[j] = t[16 + j];
    compress(s, w);
  }
  uint8_t* o = out + i * 32;
#pragma unroll
  for (int k = 0; k < 8; k++) {
    o[4 * k] = s[k] >> 24; o[4 * k + 1] = s[k] >> 16; o[4 * k + 2] = s[k] >> 8; o[4 * k + 3] = s[k];
  }
}
"""

IMAGE = "leafhash.fatbin"
_built: dict[tuple[str, str], tuple[str, str]] = {}


def build(cache_dir: str | os.PathLike, arch_list: str, timeout: float = 300.0) -> tuple[str, str]:
    """(directory holding the kernel's fatbin, '') or ('', why not); compiled once per source, nvcc and arch into
    `<cache>/leafhash/<key>/`, sealed, and checked against its seal at each process's first use."""
    k = (str(cache_dir), arch_list)
    if k not in _built:
        _built[k] = _build(Path(cache_dir), arch_list, timeout)
    return _built[k]


def _build(cache_dir: Path, arch_list: str, timeout: float) -> tuple[str, str]:
    from pipeline.evaluate.artifacts import file_hashes, flocked, seal
    from pipeline.evaluate.build import _toolchain, gencode_flags

    tc = _toolchain()
    nvcc, version = tc["nvcc"], tc["nvcc_version"]
    if version == "missing":
        return "", "no nvcc"
    flags = gencode_flags(arch_list)
    if not flags:
        return "", f"no architecture in {arch_list!r}"
    key = hashlib.sha256("\0".join([SOURCE, version, *flags]).encode()).hexdigest()[:32]
    out = cache_dir / "leafhash" / key
    image = out / IMAGE
    with flocked(cache_dir / "locks" / f"leafhash-{key}.lock"):
        if not image.is_file():
            out.mkdir(parents=True, exist_ok=True)
            os.chmod(out, 0o755)  # the jails read it (their uids are not ours)
            src = out / "leafhash.cu"
            src.write_text(SOURCE)
            tmp = out / f"{IMAGE}.tmp-{os.getpid()}"
            try:
                r = subprocess.run(
                    [nvcc, "-fatbin", "-O3", *flags, str(src), "-o", str(tmp)],
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
            except (OSError, subprocess.SubprocessError) as e:
                tmp.unlink(missing_ok=True)
                return "", f"nvcc: {e}"
            if r.returncode != 0 or not tmp.is_file():
                tmp.unlink(missing_ok=True)
                return "", f"nvcc failed: {(r.stderr or r.stdout)[-500:]}"
            os.chmod(tmp, 0o644)
            os.replace(tmp, image)
        want = seal(cache_dir, image)
    if file_hashes(image) != want:
        return "", "the leaf hash kernel differs from its build record"
    return str(out), ""


class DeviceHasher:
    """The leaf digests of a flat uint8 CUDA tensor, computed on its device (candidate side). The kernel is loaded
    through the driver API into the context torch made current: no CUDA runtime of its own beside torch's."""

    def __init__(self, lib_dir: str) -> None:
        self._cuda = ctypes.CDLL("libcuda.so.1")
        self._image = (Path(lib_dir) / IMAGE).read_bytes()
        self._fn: ctypes.c_void_p | None = None

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what}: CUDA driver error {rc}")

    def _function(self) -> ctypes.c_void_p:
        if self._fn is None:
            mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
            self._check(self._cuda.cuModuleLoadData(ctypes.byref(mod), self._image), "cuModuleLoadData")
            self._check(
                self._cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"opforge_sha256_leaves"), "cuModuleGetFunction"
            )
            self._fn = fn
        return self._fn

    def leaves(self, b: Any, leaf: int) -> bytes:
        """SHA-256 of each `leaf` bytes of `b` (flat uint8, on a CUDA device), concatenated."""
        import torch

        if leaf <= 0 or leaf % 64:
            raise RuntimeError(f"a leaf of {leaf} bytes: a multiple of 64 expected")
        if b.data_ptr() % 16:
            b = b.clone()  # the kernel reads 16 bytes at a time; a fresh allocation is aligned
        n = b.numel()
        nl = -(-n // leaf)
        out = torch.empty(nl * 32, dtype=torch.uint8, device=b.device)
        if nl:
            with torch.cuda.device(b.device):
                fn = self._function()
                args = [
                    ctypes.c_void_p(b.data_ptr()),
                    ctypes.c_ulonglong(n),
                    ctypes.c_ulonglong(leaf),
                    ctypes.c_void_p(out.data_ptr()),
                    ctypes.c_ulonglong(nl),
                ]
                params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
                threads = 128
                stream = ctypes.c_void_p(torch.cuda.current_stream(b.device).cuda_stream)
                rc = self._cuda.cuLaunchKernel(
                    fn, ctypes.c_uint(-(-nl // threads)), 1, 1, threads, 1, 1, 0, stream, params, None
                )
                self._check(rc, "cuLaunchKernel")
        return out.cpu().numpy().tobytes()


def load(lib_dir: str | None) -> DeviceHasher | None:
    """The device hasher from `lib_dir`, once it has hashed a known buffer (three leaves and a tail) as hashlib does;
    else None (none given, it does not load, or it disagrees: the host computes the same digest). An honest
    candidate's commitment never depends on this kernel being right."""
    if not lib_dir:
        return None
    try:
        import torch

        from pipeline.evaluate.tensorio import LEAF_BYTES, host_leaves

        h = DeviceHasher(lib_dir)
        probe = (torch.arange(3 * LEAF_BYTES + 77, dtype=torch.int64) * 131 % 251).to(torch.uint8)
        want = host_leaves(probe.numpy().tobytes())
        return h if h.leaves(probe.cuda(), LEAF_BYTES) == want else None
    except (OSError, RuntimeError):
        return None
