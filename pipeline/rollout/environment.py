"""One task's sandboxed workspace and the tools the agent calls on it.

Paths are confined to the workspace (no absolute paths, no `..`, no symlinks out); the task and harness files are
read-only (a write is refused, and any change found afterwards is reverted from a snapshot and reported); every
tool answer is trimmed to `max_output_chars`. Agent-written code only ever runs inside the evaluation harness,
which executes it in separate processes with time and memory limits.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.identity import content_hash
from pipeline.rollout.tools import TOOL_NAMES, ToolRunner

MAX_FILE_BYTES = 256 * 1024  # larger writes are refused: a kernel source is never that big
MAX_WORKSPACE_FILES = 200
_SKIP_DIRS = {"__pycache__", ".git", "build", ".cache"}
try:  # names the harness refuses next to model_new.py (e.g. torch.py)
    from pipeline.evaluate.workspace import SHADOWING_NAMES as _SHADOWING
except ImportError:
    _SHADOWING = set()


@dataclass
class ToolResult:
    text: str
    error: bool = False  # the call failed (bad arguments, refused write, unknown tool): the model reads why
    fatal: bool = False  # the environment itself broke: the trajectory ends with tool_error
    finished: bool = False
    record: dict[str, Any] = field(default_factory=dict)  # compile/eval figures for the turn record
    compile_s: float = 0.0
    eval_s: float = 0.0


class HarnessError(RuntimeError):
    """The harness or the worker running it failed (not the model's doing): the trajectory ends with tool_error."""


def trim(text: str, limit: int) -> str:
    """Head and tail of `text` within `limit` characters (compiler errors sit at both ends)."""
    if len(text) <= limit:
        return text
    head = int(limit * 0.6)
    tail = max(0, limit - head - 60)
    return f"{text[:head]}\n... [{len(text) - head - tail} characters trimmed] ...\n{text[len(text) - tail :]}"


class KernelEnv:
    def __init__(
        self,
        task_code: str,
        workdir: Path,
        runner: ToolRunner,
        eval_settings: dict[str, Any] | None = None,
        *,
        max_output_chars: int = 8000,
        compile_cache_dir: str | None = None,
    ):
        from pipeline.evaluate.workspace import PROTECTED_FILES, init_workspace

        self.task_code = task_code
        self.root = Path(workdir).resolve()
        self.runner = runner
        self.eval_settings = dict(eval_settings or {})
        self.max_output_chars = max_output_chars
        self.compile_cache_dir = compile_cache_dir or self.eval_settings.get("cache_dir")
        init_workspace(self.root, task_code)
        self.protected = {str(p) for p in PROTECTED_FILES}
        self._snapshot = {p: (self.root / p).read_bytes() for p in self.protected if (self.root / p).is_file()}
        self.last_eval: dict[str, Any] | None = None  # the latest verify/profile result and its kernel hash
        self.last_eval_hash: str | None = None
        self.writes = 0  # files the agent wrote; with none, there is no solution of its own to score

    # -- workspace ----------------------------------------------------------------------------------------------
    def _resolve(self, rel: Any) -> Path:
        if not isinstance(rel, str) or not rel.strip():
            raise ValueError("path must be a non-empty string")
        p = Path(rel.strip())
        if p.is_absolute() or ".." in p.parts:
            raise ValueError(f"{rel!r}: paths must be relative to the workspace and stay inside it")
        full = (self.root / p).resolve()
        if full != self.root and self.root not in full.parents:
            raise ValueError(f"{rel!r}: resolves outside the workspace")
        return full

    def _rel(self, p: Path) -> str:
        return p.relative_to(self.root).as_posix()

    def files(self) -> dict[str, str]:
        """Every text file of the workspace, {relative path: content} (what a worker rebuilds)."""
        out: dict[str, str] = {}
        for p in sorted(self.root.rglob("*")):
            if not p.is_file() or p.is_symlink() or set(p.relative_to(self.root).parts) & _SKIP_DIRS:
                continue
            try:
                out[self._rel(p)] = p.read_text()
            except (UnicodeDecodeError, OSError):
                continue  # binaries (build outputs) are rebuilt by the harness, never shipped
        return out

    def solution_files(self) -> dict[str, str]:
        return {k: v for k, v in self.files().items() if k not in self.protected}

    def kernel_hash(self) -> str:
        sol = self.solution_files()
        return content_hash(*[f"{k}\0{v}" for k, v in sorted(sol.items())]) if sol else ""

    def check_protected(self) -> list[str]:
        """Undo any change to a protected file and remove files that would shadow harness imports; returns the
        harness's violation names (empty when the workspace was intact)."""
        import shutil as _shutil

        from pipeline.evaluate.workspace import check_protected

        found = list(check_protected(self.root, self.task_code))
        for rel in self.protected:  # our snapshot also catches symlink swaps the content check would follow
            p = self.root / rel
            if rel in self._snapshot and (p.is_symlink() or not p.is_file() or p.read_bytes() != self._snapshot[rel]):
                found.append(f"protected_file_modified:{rel}")
        found = sorted(set(found))
        for v in found:
            kind, _, rel = v.partition(":")
            p = self.root / rel
            if p.is_symlink() or p.is_file():
                p.unlink()
            elif p.is_dir():
                _shutil.rmtree(p, ignore_errors=True)
            if kind.startswith("protected_file") and rel in self._snapshot:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(self._snapshot[rel])
        return found

    # -- tools --------------------------------------------------------------------------------------------------
    def call(self, name: str, arguments: str | dict[str, Any] | None) -> ToolResult:
        """Run one tool call; never raises for anything the model did (that becomes error text)."""
        if name not in TOOL_NAMES:
            return ToolResult(f"error: unknown tool {name!r}; available: {', '.join(TOOL_NAMES)}", error=True)
        try:
            args = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else (arguments or {})
        except json.JSONDecodeError as e:
            return ToolResult(f"error: arguments are not valid JSON ({e.msg} at char {e.pos})", error=True)
        if not isinstance(args, dict):
            return ToolResult("error: arguments must be a JSON object", error=True)
        try:
            res = getattr(self, f"_tool_{name}")(**args)
        except TypeError as e:
            return ToolResult(f"error: bad arguments for {name}: {e}", error=True)
        except (ValueError, PermissionError, FileNotFoundError, IsADirectoryError, NotADirectoryError) as e:
            return ToolResult(f"error: {e}", error=True)
        except Exception as e:  # HarnessError or a bug: the machine failed, not the model
            return ToolResult(
                f"error: the {name} tool failed: {type(e).__name__}: {str(e)[:500]}", error=True, fatal=True
            )
        res.text = trim(res.text, self.max_output_chars)
        return res

    def _tool_list_files(self) -> ToolResult:
        lines = []
        for p in sorted(self.root.rglob("*"))[:MAX_WORKSPACE_FILES]:
            if p.is_file() and not set(p.relative_to(self.root).parts) & _SKIP_DIRS:
                rel = self._rel(p)
                lines.append(f"{rel}  {p.stat().st_size} bytes{'  (read-only)' if rel in self.protected else ''}")
        return ToolResult("\n".join(lines) or "(empty workspace)")

    def _tool_read_file(self, path: str, offset: int = 0) -> ToolResult:
        p = self._resolve(path)
        if not p.is_file():
            raise FileNotFoundError(f"{path!r} does not exist; call list_files")
        text = p.read_text(errors="replace")
        offset = max(0, int(offset))
        chunk = text[offset : offset + self.max_output_chars]
        more = len(text) - offset - len(chunk)
        return ToolResult(
            chunk
            + (f"\n... [{more} more characters; read again with offset={offset + len(chunk)}]" if more > 0 else "")
        )

    def _tool_write_file(self, path: str, content: str) -> ToolResult:
        p = self._resolve(path)
        rel = self._rel(p)
        if rel in self.protected:
            raise PermissionError(f"{rel} is read-only (task and harness files cannot be changed)")
        if p.name in _SHADOWING:
            raise PermissionError(f"{rel}: this name would shadow a module the harness imports")
        if not isinstance(content, str):
            raise ValueError("content must be a string")
        if len(content.encode()) > MAX_FILE_BYTES:
            raise ValueError(f"content is {len(content.encode())} bytes; the limit is {MAX_FILE_BYTES}")
        if p.is_symlink():
            p.unlink()
        if not p.exists() and len(self.files()) >= MAX_WORKSPACE_FILES:
            raise ValueError(f"the workspace already holds {MAX_WORKSPACE_FILES} files")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
        self.writes += 1
        return ToolResult(f"wrote {rel} ({len(content)} characters)")

    def _tool_compile(self) -> ToolResult:
        t0 = time.perf_counter()
        r = self._harness(self.runner.compile, self.files(), self.compile_cache_dir)
        dt = time.perf_counter() - t0
        head = (
            f"compile {'succeeded' if r['ok'] else 'FAILED'} in {r['seconds']:.1f} s"
            f"{' (cached)' if r.get('cached') else ''}"
        )
        log = r.get("log", "").strip()
        return ToolResult(
            head + (f"\n{log}" if log and (not r["ok"] or len(log) < 2000) else ""),
            record={"action_kind": "compile", "compiled": bool(r["ok"])},
            compile_s=dt,
        )

    @staticmethod
    def _harness(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as e:  # whatever the harness raised, it is not the model's error to fix
            raise HarnessError(f"{type(e).__name__}: {str(e)[:500]}") from e

    def evaluate(self, mode: str) -> tuple[dict[str, Any], float]:
        t0 = time.perf_counter()
        res = self._harness(self.runner.evaluate, self.task_code, self.files(), mode, self.eval_settings)
        self.last_eval, self.last_eval_hash = res, self.kernel_hash()
        return res, time.perf_counter() - t0

    def _tool_verify(self) -> ToolResult:
        res, dt = self.evaluate("verify")
        return ToolResult(format_eval(res, "verify"), record=eval_record(res), eval_s=dt)

    def _tool_profile(self) -> ToolResult:
        if not self.writes:  # no solution of the agent's own yet: the reference's times are what it needs
            t0 = time.perf_counter()
            ref = self._harness(self.runner.reference, self.task_code, self.eval_settings)
            figs = " ".join(f"{k}={ref[k]:.4g}" for k in ("eager_ms", "compile_ms") if ref.get(k) is not None)
            text = "profile (reference only; no solution written yet): " + (figs or "no times")
            text += "".join(f"\n{k}: {ref[k]}" for k in ("device", "reason", "error") if ref.get(k))
            return ToolResult(
                text,
                record={"eager_ms": ref.get("eager_ms"), "compile_ms": ref.get("compile_ms")},
                eval_s=time.perf_counter() - t0,
            )
        res, dt = self.evaluate("full")
        return ToolResult(format_eval(res, "profile"), record=eval_record(res), eval_s=dt)

    def _tool_finish(self, summary: str = "") -> ToolResult:
        return ToolResult("session finished; the current solution will be scored", finished=True)


_NUM_KEYS = ("eager_ms", "compile_ms", "solution_ms", "speedup_vs_eager", "speedup_vs_compile")


def eval_record(res: dict[str, Any]) -> dict[str, Any]:
    rec = {"compiled": res.get("compiled"), "correct": res.get("correct"), "reward": res.get("reward")}
    for k in _NUM_KEYS:
        v = res.get(k)
        rec[k] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v >= 0 else None
    if rec["reward"] is not None:
        rec["reward"] = int(rec["reward"])
    return rec


def format_eval(res: dict[str, Any], what: str) -> str:
    """The harness result as the agent reads it: verdict first, then figures, then the trimmed log."""
    lines = [f"{what}: compiled={res.get('compiled')} correct={res.get('correct')} reward={res.get('reward')}"]
    if res.get("reason"):
        lines.append(f"reason: {res['reason']}")
    figs = [
        f"{k}={res[k]:.4g}"
        for k in (*_NUM_KEYS, "max_abs_err", "max_rel_err")
        if isinstance(res.get(k), (int, float)) and not isinstance(res.get(k), bool)
    ]
    if figs:
        lines.append(" ".join(figs))
    if res.get("violations"):
        lines.append("violations: " + ", ".join(map(str, res["violations"])))
    if res.get("device"):
        lines.append(f"device: {res['device']}")
    for k in ("error", "log", "compile_log"):
        if res.get(k):
            lines.append(f"{k}:\n{str(res[k]).strip()}")
    return "\n".join(lines)
