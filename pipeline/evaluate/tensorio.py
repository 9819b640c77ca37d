"""Tensors across process boundaries (torch + stdlib only): input generation, files, digests.

Inputs and outputs cross between the reference process, the candidate process and the trusted side as
`torch.save` files of plain tensors, lists, tuples, dicts and numbers; every reader uses `torch.load(...,
weights_only=True)` (no arbitrary unpickling) and the trusted side re-checks the structure (`plain`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import random
import time
from typing import Any, Callable

import numpy as np
import torch

# A KernelBench level-1 input or output reaches 8 GiB; the trusted side bounds each file more tightly where it knows
# more (a candidate's output by the reference output's size).
MAX_FILE_BYTES = 64 * 2**30
CHUNK = 1 << 26  # elements per piece where a whole-tensor temporary would cost too much memory (digest, compare)


def tmap(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(tmap(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: tmap(v, fn) for k, v in obj.items()}
    return obj


def flatten(obj: Any) -> list[Any]:
    """An output's leaves in order; a dict's as key, value by sorted key (a task may return a dict of tensors)."""
    if isinstance(obj, (list, tuple)):
        return [x for o in obj for x in flatten(o)]
    if isinstance(obj, dict):
        return [x for k in sorted(obj, key=str) for x in (k, *flatten(obj[k]))]
    return [obj]


def tensors(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in tensors(o)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in tensors(v)]
    return []


def has_dict(obj: Any) -> bool:
    if isinstance(obj, dict):
        return True
    return isinstance(obj, (list, tuple)) and any(has_dict(o) for o in obj)


def seed_all(seed: int) -> None:
    """torch's, Python's and numpy's generators from `seed`: a task may draw with any of them, and every process
    that draws from it must get the same values."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def init_inputs(task: Any, seed: int) -> list[Any]:
    """get_init_inputs() drawn under the init seed: a task that draws tensors there (a weight as `torch.randn`) gives
    the reference and the candidate the same ones, as KernelBench's one call shared by both models does (each
    process called it with its generators wherever earlier work left them: honest candidates got -1). torch's
    generator is back at the seed on return: the model is built under it."""
    seed_all(seed)
    init = list(task.get_init_inputs())
    torch.manual_seed(seed)
    return init


def make_inputs(task: Any, seed: int, device: torch.device, variant: str = "base") -> list[Any]:
    """The task's inputs for `seed`, drawn on `device` (GPU RNG: cheap). `variant` "perturbed" multiplies every
    floating input elementwise by a factor in [0.5, 1.5] (signs and orders of magnitude kept, so the task's
    preconditions hold; the distribution differs, so outputs that barely move under get_inputs' own distribution
    still get checked where they differ). Structure a correct kernel may rely on is kept (`_perturbable`):
    symmetric matrices are scaled as D A D (positive-definite stays so); inputs within [-1, 1] stay there;
    labels, masks, integer values and sorted rows are left alone. A task whose code still refuses the perturbed
    inputs gets its own distribution for that trial (reference.main)."""
    seed_all(seed)
    with torch.device(device):
        xs = list(task.get_inputs())
    xs = [tmap(x, lambda t: t.to(device)) for x in xs]
    if variant == "perturbed":
        g = torch.Generator(device=device)
        g.manual_seed(seed ^ 0x5DEECE66D)

        def perturb(t: torch.Tensor) -> torch.Tensor:
            how = _perturbable(t)
            if not how:
                return t
            if how == "symmetric":
                # D A D with D positive diagonal (factors a_i a_j in [0.5, 1.5]): symmetric, and positive-definite
                # where A is (a Cholesky task's input); a symmetric elementwise factor is not
                a = (torch.rand(t.shape[:-1], generator=g, device=device, dtype=torch.float32) + 0.5).sqrt()
                return (t.float() * (a.unsqueeze(-1) * a.unsqueeze(-2))).to(t.dtype)  # a_i a_j == a_j a_i exactly
            x = t.float()
            f = torch.rand(t.shape, generator=g, device=device, dtype=torch.float32) + 0.5
            y = x * f
            if float(x.abs().max()) <= 1.0:
                # within [-1, 1] (torch.rand's probabilities, cosines): kept there, divided where multiplying would
                # leave it (binary_cross_entropy refuses a probability past 1)
                y = torch.where(y.abs() > 1.0, x / f, y)
            return y.to(t.dtype)

        xs = [tmap(x, perturb) for x in xs]
    return xs


def _perturbable(t: torch.Tensor) -> str:
    """How a floating input may be perturbed: "" (not at all), "symmetric" or "elementwise". Judged on a sample
    (a few thousand elements, a few rows and matrices), so that it costs nothing on GiB inputs."""
    if not t.is_floating_point() or t.numel() == 0:
        return ""
    flat = t.detach().reshape(-1)
    sample = flat[:: max(1, flat.numel() // 4096)][:4096].float()
    if torch.unique(sample).numel() <= 8 or bool((sample == sample.round()).all()):
        return ""  # labels (+-1), masks, one-hot, counts, constants
    if t.dim() >= 1 and t.shape[-1] > 1:
        rows = t.detach().reshape(-1, t.shape[-1])[:64]
        if bool((rows[:, 1:] >= rows[:, :-1]).all()):
            return ""  # sorted rows: boundaries of a search, cumulative values
    if t.dim() >= 2 and t.shape[-1] == t.shape[-2] and t.shape[-1] > 1:
        m = t.detach().reshape(-1, t.shape[-1], t.shape[-1])[:4]
        if torch.equal(m, m.transpose(-1, -2)):
            return "symmetric"
    return "elementwise"


def _own_host_copy(t: torch.Tensor) -> torch.Tensor:
    """A host tensor holding just its own elements (a view would save its whole storage); one already so is kept
    (a 6 GiB output copied again to save it doubled the host memory)."""
    t = _resolved(t)
    whole = t.storage_offset() == 0 and t.untyped_storage().nbytes() == t.numel() * t.element_size()
    if t.device.type == "cpu" and t.is_contiguous() and whole:
        return t
    return t.to("cpu", copy=True).contiguous()


def plain_map(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """`obj` with each tensor mapped by `fn`, as a file can hold it and a weights_only load read it back: a tuple of
    any kind (torch.topk's or torch.max's named result, a namedtuple) as a plain tuple, a numpy scalar as the Python
    number (both were refused on load, and a task returning one was called defective)."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [plain_map(o, fn) for o in obj]
    if isinstance(obj, tuple):
        return tuple(plain_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: plain_map(v, fn) for k, v in obj.items()}
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def unwrapped(out: Any) -> Any:
    """An output holding one of the model's own nn.Parameters (a task returning its weight) with the plain tensor
    it is; any other tensor subclass stays (the candidate's check_plain names it: it may defer its work)."""
    if not any(type(t) is torch.nn.Parameter for t in tensors(out)):
        return out
    return plain_map(out, lambda t: t.detach() if type(t) is torch.nn.Parameter else t)


def to_host(obj: Any) -> Any:
    return plain_map(obj, _own_host_copy)


class NoRoom(OSError):
    """A file could not be written because its file system is full: the host's fault (other evaluations' files),
    never the task's or the candidate's. torch.save says only "unexpected pos" then."""


def save(obj: Any, path: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    # No CRC32 per record: ~1-2 s per GiB written; the files live for one evaluation on one host.
    setter = getattr(torch.serialization, "set_crc32_options", None)
    if setter is not None:
        setter(False)
    host = to_host(obj)
    try:
        torch.save(host, tmp)
        os.replace(tmp, path)
    except Exception as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        need = sum(t.numel() * t.element_size() for t in tensors(host)) + (1 << 20)
        try:
            st = os.statvfs(os.path.dirname(path) or ".")
            free = st.f_bavail * st.f_frsize
        except OSError:
            raise e from None
        if free < need:
            raise NoRoom(errno.ENOSPC, f"no space left for {need} bytes ({free} free): {e}", path) from e
        raise


NO_ROOM_WAIT_S = 120.0  # the longest an evaluation that ran out of disk waits for room before it tries again
NO_ROOM_SLACK = 1 << 30  # room enough to try again: this much more free than at the failure


def wait_for_room(path: str, limit_s: float = NO_ROOM_WAIT_S) -> bool:
    """Until the file system of `path` has NO_ROOM_SLACK more free bytes than now (other evaluations finished and
    removed their files), at most `limit_s`; whether that room came."""

    def free() -> int:
        st = os.statvfs(path)
        return st.f_bavail * st.f_frsize

    want, end = free() + NO_ROOM_SLACK, time.monotonic() + limit_s
    while free() < want and time.monotonic() < end:
        time.sleep(0.5)  # polled: no event tells a file system's free space
    return free() >= want


def out_of_room(e: BaseException) -> bool:
    """An OSError that says the file system is full (NoRoom, or ENOSPC raised by the trusted side's own writes)."""
    return isinstance(e, NoRoom) or (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT))


class BadFile(ValueError):
    pass


def plain(obj: Any, depth: int = 0) -> bool:
    """Only plain tensors (not subclasses), numbers, strings, None and containers of them."""
    if depth > 8:
        return False
    if isinstance(obj, torch.Tensor):
        # Backed by its own bytes: a file of a few KB cannot hold a broadcast view of TiBs (expand, stride 0) that
        # the trusted side would materialise.
        need = (obj.storage_offset() + obj.numel()) * obj.element_size() if obj.numel() else 0
        return type(obj) is torch.Tensor and obj.is_contiguous() and obj.untyped_storage().nbytes() >= need
    if isinstance(obj, (list, tuple)):
        return all(plain(o, depth + 1) for o in obj)
    if isinstance(obj, dict):
        return all(isinstance(k, str) and plain(v, depth + 1) for k, v in obj.items())
    return obj is None or isinstance(obj, (bool, int, float, complex, str))


class _Capped(io.RawIOBase):
    """A read-only view of an open fd that ends at `size` bytes, whatever the file does meanwhile."""

    def __init__(self, fd: int, size: int):
        self.fd, self.size, self.pos = fd, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, b) -> int:
        view = memoryview(b).cast("B")
        n = max(0, min(len(view), self.size - self.pos))
        got = 0
        while got < n:  # one read(2) moves at most ~2 GiB; a record can be larger
            k = os.preadv(self.fd, [view[got:n]], self.pos + got)
            if k <= 0:
                break
            got += k
        self.pos += got
        return got


def load(path: str, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """Load a tensor file written by another process: a regular file (not a link, FIFO or device: opened with
    O_NOFOLLOW | O_NONBLOCK and checked), size-bounded, weights_only, plain structure only."""
    import stat

    name = os.path.basename(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise BadFile(f"missing or not a plain file: {name}") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadFile(f"{name}: not a regular file")
        if st.st_size > max_bytes:
            raise BadFile(f"{name}: {st.st_size} bytes (at most {max_bytes})")
        # Read straight into the tensors (no whole-file copy beside them: outputs reach GiBs), never past the
        # size checked above, so a writer that grows the file meanwhile cannot make this read more.
        try:
            obj = torch.load(_Capped(fd, st.st_size), map_location="cpu", weights_only=True)
        except Exception as e:  # any unreadable file is the writer's fault
            raise BadFile(f"{name}: {type(e).__name__}: {str(e)[:200]}") from e
    finally:
        os.close(fd)
    if not plain(obj):
        raise BadFile(f"{os.path.basename(path)}: not plain tensors")
    return obj


LEAF_BYTES = 1 << 12  # a tensor's bytes are hashed in leaves of 4 KiB: one GPU thread each (leafhash.py)
_device_hasher: Any = None


def use_device_hasher(directory: str | None) -> None:
    """Hash device tensors' leaves on their GPU from now on, with the kernel in `directory` (leafhash.build). The
    candidate's process loads it before any candidate code; without it the digest is the same, made on the host.
    (The host hashes on one thread: with 4 KiB leaves, threads contended for the interpreter's lock and were slower,
    814 against 597 ms per GiB on 2 cores.)"""
    global _device_hasher
    if directory and _device_hasher is None:
        from pipeline.evaluate import leafhash

        _device_hasher = leafhash.load(directory)


def host_leaves(piece: Any, leaf: int = LEAF_BYTES) -> bytes:
    """SHA-256 of each `leaf` bytes of a host buffer, concatenated (the pieces of one tensor are whole multiples of
    leaves but for the last): what the GPU's kernel computes."""
    mv = memoryview(piece).cast("B")
    return b"".join(hashlib.sha256(mv[i : i + leaf]).digest() for i in range(0, len(mv), leaf))


def _tensor_leaves(b: torch.Tensor) -> bytes:
    """The leaf digests of a flat uint8 tensor: on its GPU where the leaf hasher loaded, else on the host. The same
    bytes either way (the GPU's are checked against hashlib's in the GPU tests)."""
    if b.device.type == "cuda" and _device_hasher is not None:
        try:
            return _device_hasher.leaves(b, LEAF_BYTES)
        except RuntimeError:
            pass  # the host computes the same digest
    return b"".join(host_leaves(piece) for piece in _host_bytes(b))


def _walk(obj: Any, put: Callable[[str], None], tensor: Callable[[torch.Tensor], None], depth: int = 0) -> None:
    """The commitment's traversal: containers, keys and non-tensor values as tokens, tensors in `tensors` order."""
    if isinstance(obj, torch.Tensor):
        tensor(obj)
    elif depth > 8:
        put("deep")  # plain() rejects it anyway
    elif isinstance(obj, (list, tuple)):
        put(f"{'list' if isinstance(obj, list) else 'tuple'}{len(obj)}")  # a named tuple is saved as a tuple
        for x in obj:
            _walk(x, put, tensor, depth + 1)
    elif isinstance(obj, dict):
        put(f"dict{len(obj)}")
        for k, v in obj.items():
            put(_value(k))
            _walk(v, put, tensor, depth + 1)
    else:
        put(_value(obj))


def _hasher() -> tuple[Any, Callable[[str], None]]:
    h = hashlib.sha256()

    def put(token: str) -> None:
        data = token.encode("utf-8", "surrogatepass")
        h.update(b"%d:" % len(data) + data)  # length-prefixed: no two structures encode alike

    return h, put


def _resolved(t: torch.Tensor) -> torch.Tensor:
    """`t` with a lazy conjugate or negation applied (a view with the bit set cannot be seen as bytes, and a file
    keeps the bit): the values it stands for."""
    return t.detach().resolve_conj().resolve_neg()


def _flat_bytes(t: torch.Tensor) -> torch.Tensor:
    return _resolved(t).contiguous().reshape(-1).view(torch.uint8)


def _token(dtype: torch.dtype, shape: list[int]) -> str:
    return f"T{str(dtype).replace('torch.', '')}{list(shape)}"


def commitment(obj: Any) -> tuple[str, list[bytes]]:
    """A commitment to an output: SHA-256 of its structure (containers, dtypes, shapes, every non-tensor value as it
    will load) and of every tensor's bytes, as the SHA-256 of each 4 KiB leaf in order (a hash tree of depth one:
    as collision-resistant as SHA-256; the leaves are hashed on the tensor's GPU, `use_device_hasher`, or on the
    host); and each tensor's leaf digests, with which any leaf can later be proven to be the committed output's
    (`sampled`, `open_sampled`). The trusted side recomputes it on the host.
    Collision-resistant on purpose: an additive checksum (the sum of the bytes as int32 words, used before) let a
    candidate that learnt a call was checked compute the right output then and nudge its low-order bits, within
    tolerance, until the sum matched what it had committed for a stale one."""
    h, put = _hasher()
    leaves: list[bytes] = []

    def tensor(t: torch.Tensor) -> None:
        put(_token(t.dtype, list(t.shape)))
        leaves.append(_tensor_leaves(_flat_bytes(t)))
        h.update(leaves[-1])

    _walk(obj, put, tensor)
    return h.hexdigest(), leaves


def digest(obj: Any) -> str:
    """`commitment`'s digest alone."""
    return commitment(obj)[0]


FINGERPRINT_LEAVES = 64


def fingerprint(obj: Any, seed: int) -> str:
    """SHA-256 of an output's structure (as `commitment` reads it), of FINGERPRINT_LEAVES of each tensor's 4 KiB
    leaves (all of a smaller one), picked from `seed` (secret, one per judgement: the same leaves of outputs of one
    shape), and of each tensor's sum as 8-byte words (every byte counts: outputs apart in one element differ).
    Tells whether an output repeats an earlier one (`result_caching`, a label of an output already found wrong)
    without hashing every byte (a GiB took 0.8 s on the host)."""
    import random

    h, put = _hasher()
    count = [0]

    def tensor(t: torch.Tensor) -> None:
        b = _flat_bytes(t).cpu()
        put(_token(t.dtype, list(t.shape)))
        picks = pick_leaves(leaf_count(b.numel()), FINGERPRINT_LEAVES, random.Random(f"{seed}:{count[0]}"))
        count[0] += 1
        h.update(_gather(b, picks).numpy().tobytes())
        h.update(b"%d:%d" % _word_sum(b))

    _walk(obj, put, tensor)
    return h.hexdigest()


def _word_sum(b: torch.Tensor) -> tuple[int, int]:
    """(the sum of a flat uint8 tensor's 8-byte words and tail bytes, wrapping, or of its bytes where no 8-byte view
    is allowed; its length). Integer sums wrap the same in any order: one value for one content."""
    words, tail = _as_words(b)
    return (int(words.sum()) if words is not None else 0) + int(tail.sum(dtype=torch.int64)), b.numel()


def _as_words(b: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
    """A flat uint8 tensor as (its 8-byte words, the tail bytes), or (None, all of it) where its offset allows no
    8-byte view. Words: 4.4x faster than bytes to compare on the host."""
    n = b.numel() // 8 * 8
    try:
        return b[:n].view(torch.int64), b[n:]
    except RuntimeError:
        return None, b


def identical(a: Any, b: Any) -> bool:
    """Whether `a` and `b` (on one device) have the same commitment (`digest(a) == digest(b)`), by comparing them
    instead of hashing both: the same structure tokens and every tensor's bytes equal. Two outputs held here need no
    hash (a GiB took 0.6-0.8 s to hash on the host, once per output)."""
    toks: list[list[str]] = [[], []]
    tens: list[list[torch.Tensor]] = [[], []]
    for k, obj in enumerate((a, b)):

        def tensor(t: torch.Tensor, k: int = k) -> None:
            toks[k].append(_token(t.dtype, list(t.shape)))
            tens[k].append(_flat_bytes(t))

        _walk(obj, toks[k].append, tensor)
    if toks[0] != toks[1]:
        return False
    return all(x.device == y.device and _same_bytes(x, y) for x, y in zip(tens[0], tens[1]))


def _same_bytes(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Two flat uint8 tensors of one length hold the same bytes (as words where both allow it, `_as_words`)."""
    (wx, tx), (wy, ty) = _as_words(x), _as_words(y)
    if wx is None or wy is None:
        return torch.equal(x, y)
    return torch.equal(wx, wy) and torch.equal(tx, ty)


def leaf_count(nbytes: int) -> int:
    return -(-nbytes // LEAF_BYTES)


def pick_leaves(n: int, k: int, rng: Any) -> list[int]:
    """Which of a tensor's `n` leaves a check compares: all of them where n <= k, else the first, the last and k - 2
    others drawn with `rng` (the trusted side's secret generator), in order."""
    if n <= k:
        return list(range(n))
    if k < 2:
        return sorted(rng.sample(range(n), k))
    return [0, *sorted(rng.sample(range(1, n - 1), k - 2)), n - 1]


def _gather(flat: torch.Tensor, picks: list[int]) -> torch.Tensor:
    if not picks:
        return flat[:0]
    return torch.cat([flat[j * LEAF_BYTES : (j + 1) * LEAF_BYTES] for j in picks])


def tensor_picks(obj: Any, counts: list[int], picks: dict) -> list[list[int]]:
    """The leaves of each tensor of `obj` (with `counts` leaves each, in `tensors` order) a sampled check compares:
    those `picks["at"]` names for its place in `flatten(obj)` (where the reference holds a tensor), else all of a
    tensor of at most `picks["whole_max"]` leaves (a 0-dim tensor standing for the reference's number), else none.
    The candidate and the trusted side apply this same rule, to the output and to its record's skeleton."""
    at = picks.get("at") if isinstance(picks.get("at"), dict) else {}
    whole_max = int(picks.get("whole_max") or 0)
    places = [i for i, x in enumerate(flatten(obj)) if isinstance(x, torch.Tensor)]
    out = []
    for place, n in zip(places, counts):
        given = at.get(str(place))
        mine = given if isinstance(given, list) else (list(range(n)) if n <= whole_max else [])
        out.append(sorted({j for j in mine if type(j) is int and 0 <= j < n}))
    return out


def sampled(obj: Any, leaves: list[bytes], picks: dict) -> dict:
    """The candidate's record of a committed output for a sampled check: its structure with every tensor emptied,
    the tensors' shapes, their leaf digests (from `commitment`) and the bytes of the leaves `tensor_picks` names.
    Nothing in it is trusted: `open_sampled` proves it against the commitment."""
    ts = tensors(obj)
    mine = tensor_picks(obj, [leaf_count(t.numel() * t.element_size()) for t in ts], picks)
    return {
        "skeleton": plain_map(obj, lambda t: torch.empty(0, dtype=t.dtype)),
        "shapes": [list(t.shape) for t in ts],
        "leaves": [
            torch.frombuffer(bytearray(b), dtype=torch.uint8) if b else torch.empty(0, dtype=torch.uint8)
            for b in leaves
        ],
        "bytes": [_gather(_flat_bytes(t), p).cpu() for t, p in zip(ts, mine)],
    }


class Forged(ValueError):
    """A sampled record whose leaves are not those its output committed to."""


def open_sampled(rec: Any, picks: dict) -> tuple[str, Any, list[list[int]]]:
    """The trusted side's reading of a `sampled` record: (the digest its structure and leaf digests give, to be
    compared with the commitment; the output with every tensor replaced by its picked leaves' elements, flat; each
    tensor's shape). Raises BadFile for a malformed record and Forged for a picked leaf whose bytes do not hash to
    its leaf digest."""
    if not isinstance(rec, dict) or set(rec) != {"skeleton", "shapes", "leaves", "bytes"}:
        raise BadFile("the kept record is not a sampled output")
    ts = tensors(rec["skeleton"])
    shapes, leaves, data = rec["shapes"], rec["leaves"], rec["bytes"]
    n = len(ts)
    if not all(isinstance(x, list) and len(x) == n for x in (shapes, leaves, data)):
        raise BadFile("the kept record's lists do not match its tensors")
    sizes = []
    for k, (t, shape) in enumerate(zip(ts, shapes)):
        if t.numel() or not (
            isinstance(shape, list) and len(shape) <= 64 and all(type(d) is int and d >= 0 for d in shape)
        ):
            raise BadFile(f"tensor {k}: a bad shape in the kept record")
        nbytes = t.element_size()
        for d in shape:
            nbytes *= d
        if nbytes > MAX_FILE_BYTES:
            raise BadFile(f"tensor {k}: a shape past any output's size")
        sizes.append(nbytes)
    mine = tensor_picks(rec["skeleton"], [leaf_count(b) for b in sizes], picks)
    h, put = _hasher()
    parts: list[torch.Tensor] = []
    claimed: list[tuple[list[int], bytes]] = []
    for k, t in enumerate(ts):
        nbytes, nl, lv, got = sizes[k], leaf_count(sizes[k]), leaves[k], data[k]
        want = sum(min(LEAF_BYTES, nbytes - j * LEAF_BYTES) for j in mine[k])
        for x, size in ((lv, 32 * nl), (got, want)):
            if not (isinstance(x, torch.Tensor) and x.dtype == torch.uint8 and x.dim() == 1 and x.numel() == size):
                raise BadFile(f"tensor {k}: leaf digests or picked bytes of the wrong size")
        lv_b, got_b = lv.clone().numpy().tobytes(), got.clone()
        at = 0
        for j in mine[k]:
            size = min(LEAF_BYTES, nbytes - j * LEAF_BYTES)
            if hashlib.sha256(got_b[at : at + size].numpy().tobytes()).digest() != lv_b[32 * j : 32 * j + 32]:
                raise Forged(f"tensor {k}, leaf {j}: its bytes are not the committed leaf")
            at += size
        parts.append(got_b.view(t.dtype) if got_b.numel() else torch.empty(0, dtype=t.dtype))
        claimed.append((shapes[k], lv_b))

    it = iter(claimed)

    def tensor(t: torch.Tensor) -> None:
        shape, lv_b = next(it)
        put(_token(t.dtype, shape))
        h.update(lv_b)

    _walk(rec["skeleton"], put, tensor)
    it2 = iter(parts)
    return h.hexdigest(), tmap(rec["skeleton"], lambda t: next(it2)), [list(x) for x in shapes]


SAMPLED = ".sampled"  # a checked call's reference file is <name>.sampled.pt where it holds `reference_sample`'s record


def reference_sample(out: Any, seed: int, k: int, scale: Callable[[torch.Tensor], float]) -> dict | None:
    """The reference side of a sampled check, made by the reference process for a checked timed call: `k` leaves per
    tensor picked with a secret seed (`pick_leaves`), their elements, each tensor's shape and its whole tensor's
    scale. The trusted side sends the picks to the candidate only after it committed that call's output; the full
    output (GiBs on large tasks) is never written. None for an output holding a dict, written whole: a correct
    candidate need not share its key order."""
    if has_dict(out):
        return None
    rng = random.Random(seed)
    ts = tensors(out)
    picks = [pick_leaves(leaf_count(t.numel() * t.element_size()), k, rng) for t in ts]
    return {
        "picks": picks,
        "sample": sample_of(out, picks),
        "shapes": [list(t.shape) for t in ts],
        "scales": [float(scale(t)) if t.is_floating_point() or t.is_complex() else 0.0 for t in ts],
    }


def check_picks(sample: dict, whole_max: int) -> dict:
    """What `keep` tells the candidate of a `reference_sample` record: the picks of each reference tensor by its
    place in `flatten` (`tensor_picks`)."""
    places = [i for i, x in enumerate(flatten(sample["sample"])) if isinstance(x, torch.Tensor)]
    return {"at": {str(i): list(p) for i, p in zip(places, sample["picks"])}, "whole_max": int(whole_max)}


def sample_of(obj: Any, picks: list[list[int]]) -> Any:
    """`obj` with every tensor replaced by the elements of its picked leaves, flat (the reference side of a sampled
    check, alike to `open_sampled`'s)."""
    it = iter(range(len(tensors(obj))))

    def one(t: torch.Tensor) -> torch.Tensor:
        k = next(it)
        mine = [j for j in (picks[k] if k < len(picks) else []) if j < leaf_count(t.numel() * t.element_size())]
        got = _gather(_flat_bytes(t), mine).clone()
        return got.view(t.dtype) if got.numel() else torch.empty(0, dtype=t.dtype)

    return tmap(obj, one)


PIN_BYTES = 1 << 24  # a staging buffer's size (a whole number of leaves): device bytes reach the hash through two
_staging: dict[int, list[torch.Tensor]] = {}


def _host_bytes(b: torch.Tensor) -> Any:
    """The bytes of a flat uint8 tensor as host buffers, in order. A host tensor's are its own; a device tensor's are
    copied in pieces into two pinned buffers, the next piece's copy running while the last one is hashed (a plain
    `.cpu()` per piece allocated pageable memory each call and left the copy and the hash in series)."""
    n = b.numel()
    if n == 0:
        return
    if b.device.type != "cuda":
        for i in range(0, n, CHUNK):
            yield b[i : i + CHUNK].numpy().data
        return
    size = min(PIN_BYTES, n)
    bufs = _staging.get(b.device.index or 0)
    if bufs is None or bufs[0].numel() < size:
        bufs = [torch.empty(max(size, 1 << 20), dtype=torch.uint8, pin_memory=True) for _ in range(2)]
        _staging[b.device.index or 0] = bufs
    stream = torch.cuda.current_stream(b.device)
    starts = list(range(0, n, size))

    def copy(k: int) -> torch.cuda.Event:
        piece = b[starts[k] : starts[k] + size]
        bufs[k % 2][: piece.numel()].copy_(piece, non_blocking=True)
        ev = torch.cuda.Event()
        ev.record(stream)
        return ev

    pending = copy(0)  # n > 0: at least one piece
    for k in range(len(starts)):
        done = pending
        pending = copy(k + 1) if k + 1 < len(starts) else None  # into the other buffer, hashed two pieces ago
        done.synchronize()
        yield bufs[k % 2][: min(size, n - starts[k])].numpy().data


def _value(o: Any) -> str:
    """A non-tensor leaf as the file will hold it (subclasses of numbers as their base type, numpy scalars as
    Python numbers: plain_map)."""
    if isinstance(o, np.generic):
        o = o.item()
    if o is None:
        return "None"
    for base in (bool, int, float, complex, str):
        if isinstance(o, base):
            return f"{base.__name__}:{base(o)!r}"
    return f"?{type(o).__name__}"
