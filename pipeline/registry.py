"""Every stage, in pipeline order: the declarations of the stage packages (`pipeline/<pkg>/spec.py`).

Importing this module imports only those small declaration modules (the standard library and pipeline.stage);
a stage's code is imported when it runs.
"""

from __future__ import annotations

import importlib

from pipeline.stage import Stage

# (module, attribute) of each declaration, in data-flow order.
DECLARATIONS = [
    ("pipeline.synth.spec", "STAGE"),
    ("pipeline.validate.spec", "STAGE"),
    ("pipeline.decontam.spec", "STAGE"),
    ("pipeline.decontam.spec", "DEDUP"),
    ("pipeline.rollout.spec", "STAGE"),
    ("pipeline.evaluate.spec", "STAGE"),
    ("pipeline.curate.spec", "STAGE"),
    ("pipeline.publish.spec", "STAGE"),
]


def stages() -> list[Stage]:
    return [getattr(importlib.import_module(m), a) for m, a in DECLARATIONS]


def get(name: str) -> Stage:
    for s in stages():
        if s.name == name:
            return s
    raise KeyError(f"no stage named {name!r} (stages: {', '.join(s.name for s in stages())})")


def names() -> list[str]:
    return [s.name for s in stages()]
