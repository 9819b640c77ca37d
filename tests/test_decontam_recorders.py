"""The order a confirmation's models assign their tensors in (jailed._model's recorders on nn.Module's setters),
through the real jail. A worker that forks confirmation children installs the recorders once, for good, and its
children inherit them (setting a method of nn.Module invalidates the type caches of all its subclasses: a fresh
child paid 1.3 ms for each). Every child still records: the first and the later ones of one worker, and one whose
task replaced a setter in its own module body (the recorder goes over what it put there, as before each model).
"""

from __future__ import annotations

import pytest

from pipeline.decontam.settings import DecontamSettings

HEAD = "# recorders\nimport torch\nimport torch.nn as nn\n\n"
TAIL = "\ndef get_inputs():\n    return [torch.randn(4, 16)]\n\ndef get_init_inputs():\n    return []\n"
# Two tensors of one shape whose names do not tie: the tie by shape follows the order the source assigns them in.
# In torch's order (a module's own parameters before its submodules') the problem's gain comes first, the copy's
# last: the first run would tie them crosswise, and only a retie would find the match.
PROBLEM = (
    HEAD
    + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.a = nn.Parameter(torch.randn(16))

    def forward(self, x):
        return self.lin(x) * self.a
"""
    + TAIL
)
COPY = (
    HEAD
    + """class Gain(nn.Module):
    def __init__(self):
        super().__init__()
        self.g = nn.Parameter(torch.randn(16))

    def forward(self, x):
        return x * self.g


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(16, 16)
        self.scale = Gain()

    def forward(self, x):
        return self.scale(self.layer(x))
"""
    + TAIL
)
# The same model, with nn.Module.__setattr__ replaced by its task's own as its module is loaded (one that reaches
# none of the other setters: only a recorder over it sees what it sets)
REPLACED = COPY.replace(
    "class Model(",
    """def _mine(self, name, value):
    if isinstance(value, nn.Parameter):
        self._parameters[name] = value
    elif isinstance(value, nn.Module):
        self._modules[name] = value
    else:
        object.__setattr__(self, name, value)


nn.Module.__setattr__ = _mine


class Model(""",
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from pipeline.decontam.semantic import confirm_pairs

    def fresh() -> DecontamSettings:
        return DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path_factory.mktemp("rec")))

    cands = [COPY, REPLACED, COPY + "\n# again\n"]
    together = confirm_pairs([(c, PROBLEM) for c in cands], fresh())  # one worker: three children in turn
    alone = [confirm_pairs([(c, PROBLEM)], fresh())[0] for c in cands]  # each the first child of its worker
    return together, alone


def test_every_child_of_a_worker_ties_in_source_order(reports):
    together, alone = reports
    for rep in together + alone:
        assert rep["equivalent"] and not rep.get("retied"), rep
        ties = {m[0]: m[1] for m in rep["mapping"]}
        assert ties["layer.bias"] == "lin.bias" and ties["scale.g"] == "a", rep["mapping"]


def test_a_child_reports_as_the_first_child_of_its_own_worker_would(reports):
    together, alone = reports
    for a, b in zip(together, alone):
        assert {k: v for k, v in a.items() if k != "wall_s"} == {k: v for k, v in b.items() if k != "wall_s"}
