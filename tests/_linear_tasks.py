"""Small tasks around one Linear + ReLU problem, shared by the confirmation tests; each test file passes its own
header (a comment in it keeps its codes, and so their cached traces, its own)."""

from __future__ import annotations

TAIL = "\ndef get_init_inputs():\n    return []\n"


def linear_tasks(head: str) -> tuple[str, str, str, str]:
    """(LINEAR, LINEAR_PARA, OTHER_WIDTH, OTHER_OUT): the problem; the same computation written differently (a
    paraphrase); inputs the problem's layer does not take (48 features for a Linear(64, .)); the same inputs with
    outputs of another shape (a Linear(64, 16))."""
    linear = (
        head
        + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 32)

    def forward(self, x):
        return torch.relu(self.fc(x))

def get_inputs():
    return [torch.randn(8, 64)]
"""
        + TAIL
    )
    para = (
        head
        + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.empty(32, 64))
        self.b = nn.Parameter(torch.empty(32))

    def forward(self, x):
        return torch.clamp(torch.addmm(self.b, x, self.w.t()), min=0)

def get_inputs():
    return [torch.randn(8, 64)]
"""
        + TAIL
    )
    other_width = linear.replace("torch.randn(8, 64)", "torch.randn(8, 48)").replace("Linear(64", "Linear(48")
    other_out = linear.replace("nn.Linear(64, 32)", "nn.Linear(64, 16)")
    return linear, para, other_width, other_out
