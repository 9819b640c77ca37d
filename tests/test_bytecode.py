"""Bytecode for jailed jobs: compiled once by the trusted side, loaded by jobs through the real jail, never written by
them."""

from __future__ import annotations

import importlib.util
import marshal
import sys
from pathlib import Path

from pipeline import bytecode
from pipeline.sandbox import _package_dir, _python_roots, run_command, run_sandboxed


def cached(prefix: Path, source: Path) -> Path:
    prev = sys.pycache_prefix
    sys.pycache_prefix = str(prefix)
    try:
        return Path(importlib.util.cache_from_source(str(source)))
    finally:
        sys.pycache_prefix = prev


def test_a_source_without_bytecode_beside_it_is_compiled_into_the_tree_not_beside_it(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    mod = src / "opforge_bc_probe.py"
    mod.write_text("VALUE = 1\n")
    assert not bytecode.has_bytecode(str(mod))
    prefix = tmp_path / "pyc"
    assert bytecode.ensure(prefix, [str(src)])
    assert cached(prefix, mod).exists() and not (src / "__pycache__").exists()
    assert not bytecode.has_bytecode(str(mod))  # still none beside it: the tree is separate
    # Up to date: a second parent does not compile again (the stamp matches); a new file in the dir does.
    stamp = (prefix / "done.json").read_text()
    (src / "opforge_bc_other.py").write_text("OTHER = 2\n")
    assert bytecode.ensure(prefix, [str(src)]) and (prefix / "done.json").read_text() != stamp
    assert cached(prefix, src / "opforge_bc_other.py").exists()


def test_jailed_jobs_load_the_trusted_bytecode_and_cannot_write_it(tmp_path, monkeypatch):
    """The job's interpreter reads its bytecode from the tree: a .pyc whose code differs from its source (same
    header) is what the import runs. Writing into the tree from the job fails, and the job leaves nothing there."""
    src = tmp_path / "src"
    src.mkdir()
    mod = src / "opforge_bc_jailed.py"
    mod.write_text("VALUE = 1\n")
    prefix = tmp_path / "pyc"
    assert bytecode.fill(prefix, [str(src)])
    pyc = cached(prefix, mod)
    data = pyc.read_bytes()
    pyc.write_bytes(data[:16] + marshal.dumps(compile("VALUE = 2\n", str(mod), "exec")))
    (prefix / "done.json").write_text(bytecode._stamp(bytecode.source_dirs(tuple(_python_roots()), _package_dir())))
    before = sorted(p.relative_to(prefix) for p in prefix.rglob("*"))
    monkeypatch.setenv("OPFORGE_JAIL_PYCACHE", "on")
    monkeypatch.setenv("OPFORGE_JAIL_PYCACHE_DIR", str(prefix))
    bytecode.prefix.cache_clear()
    try:
        code = (
            "import os, sys\n"
            f"sys.path.insert(0, {str(src)!r})\n"
            "import opforge_bc_jailed\n"
            "try:\n"
            f"    open({str(prefix / 'planted.pyc')!r}, 'wb').write(b'x')\n"
            "    wrote = True\n"
            "except OSError:\n"
            "    wrote = False\n"
            "emit_result({'value': opforge_bc_jailed.VALUE, 'prefix': sys.pycache_prefix, 'wrote': wrote})"
        )
        r = run_sandboxed(code, read_dirs=[str(src)], timeout_s=60)
        # A jailed command that runs Python (a build, a rollout tool's command) gets the same tree.
        c = run_command(
            [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {str(src)!r}); import opforge_bc_jailed as m; "
                "print(m.VALUE, sys.pycache_prefix)",
            ],
            read_dirs=[str(src)],
            timeout_s=60,
        )
    finally:
        bytecode.prefix.cache_clear()
    assert r.ok, (r.reason, r.error_message)
    assert r.result == {"value": 2, "prefix": str(prefix), "wrote": False}
    assert c.ok and c.stdout.split() == ["2", str(prefix)], (c.reason, c.stderr[-500:])
    after = sorted(p.relative_to(prefix) for p in prefix.rglob("*"))
    assert set(after) - set(before) <= {Path(".lock")}, set(after) ^ set(before)


def test_off_means_no_tree(monkeypatch):
    monkeypatch.setenv("OPFORGE_JAIL_PYCACHE", "off")
    bytecode.prefix.cache_clear()
    try:
        assert bytecode.prefix(_package_dir(), tuple(_python_roots())) is None
    finally:
        bytecode.prefix.cache_clear()


def test_a_job_that_could_write_where_the_tree_lies_gets_no_tree(tmp_path, monkeypatch):
    """A tree inside a job's writable dir (or holding it) would let that job plant bytecode for later jobs: such a
    job runs without the tree."""
    wd = tmp_path / "wd"
    prefix = wd / "cache" / "pyc"
    prefix.mkdir(parents=True)
    (prefix / "done.json").write_text(bytecode._stamp(bytecode.source_dirs(tuple(_python_roots()), _package_dir())))
    monkeypatch.setenv("OPFORGE_JAIL_PYCACHE", "on")
    monkeypatch.setenv("OPFORGE_JAIL_PYCACHE_DIR", str(prefix))
    bytecode.prefix.cache_clear()
    try:
        code = "import sys\nemit_result(sys.pycache_prefix)"
        inside = run_sandboxed(code, write_dirs=[str(wd)], timeout_s=60)
        holding = run_sandboxed(code, exec_dirs=[str(prefix / "sub")], timeout_s=60)
        apart = run_sandboxed(code, write_dirs=[str(tmp_path / "other")], timeout_s=60)
    finally:
        bytecode.prefix.cache_clear()
    assert inside.ok and inside.result is None, (inside.reason, inside.error_message)
    assert holding.ok and holding.result is None, (holding.reason, holding.error_message)
    assert apart.ok and apart.result == str(prefix), (apart.reason, apart.error_message)
    assert bytecode.overlaps(str(prefix), [str(wd)]) and bytecode.overlaps(str(prefix), [str(prefix / "x")])
    assert not bytecode.overlaps(str(prefix), [str(tmp_path / "other"), str(wd / "cache" / "pyc2")])


def test_the_compiler_runs_nothing_from_the_callers_dir_or_the_tree(tmp_path, monkeypatch):
    """The fill runs in an isolated interpreter from /: a `py_compile.py` in the caller's working dir, or
    PYTHONPYCACHEPREFIX pointing at a planted tree, never runs there."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = tmp_path / "ran"
    (cwd / "py_compile.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "planted"))
    monkeypatch.setenv("PYTHONPATH", str(cwd))
    src = tmp_path / "src"
    src.mkdir()
    (src / "opforge_bc_iso.py").write_text("X = 1\n")
    assert bytecode.fill(tmp_path / "pyc", [str(src)])
    assert cached(tmp_path / "pyc", src / "opforge_bc_iso.py").exists() and not marker.exists()
    assert not (tmp_path / "planted").exists()
