"""The jail on a GPU machine: a GPU job sees its GPU (and only its device nodes), a GPU memory bomb is contained and
reason-coded, the GPU is usable again by the next job, and what a jailed GPU job costs to start.

    python benchmarks/probe_jail_gpu.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.sandbox import jail_status, run_sandboxed  # noqa: E402

SEE = """
import os, torch
x = torch.randn(4096, 4096, device="cuda")
y = (x @ x).sum().item()
emit_result({"device": torch.cuda.get_device_name(0), "count": torch.cuda.device_count(),
             "nodes": sorted(n for n in os.listdir("/dev") if n.startswith("nvidia")), "ok": y == y,
             "uid": os.getuid()})
"""
BOMB = """
import torch
blocks = []
while True:
    blocks.append(torch.empty(8 * 2**30, dtype=torch.uint8, device="cuda"))
"""


def main() -> None:
    out: dict = {"status": jail_status()}
    t = time.perf_counter()
    r = run_sandboxed(SEE, timeout_s=120, memory_mb=None, gpu=True)
    out["see"] = {
        "reason": r.reason,
        "result": r.result,
        "wall_s": round(time.perf_counter() - t, 3),
        "err": r.error_message[-800:],
        "stderr": r.stderr[-800:],
        "jail": r.jail,
    }
    t = time.perf_counter()
    b = run_sandboxed(BOMB, timeout_s=120, memory_mb=None, gpu=True)
    out["bomb"] = {"reason": b.reason, "wall_s": round(time.perf_counter() - t, 3), "err": b.error_message[-300:]}
    r2 = run_sandboxed(SEE, timeout_s=120, memory_mb=None, gpu=True)
    out["after_bomb"] = {"reason": r2.reason, "ok": (r2.result or {}).get("ok")}
    starts = []
    for _ in range(5):
        t = time.perf_counter()
        s = run_sandboxed("emit_result(1)", timeout_s=60, gpu=True)
        starts.append(time.perf_counter() - t)
        assert s.ok, s
    out["gpu_job_startup_median_s"] = round(statistics.median(starts), 4)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
