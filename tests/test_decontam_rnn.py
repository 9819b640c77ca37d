"""KernelBench's LSTM/GRU problems unroll to more than 4,000 ops on meta tensors: their semantic view is the first
ops of the forward, marked truncated, used only to pick problems for the functional confirmation. A paraphrase of
one is confirmed with its source; an RNN task that computes something else is neither a match nor a near-variant
(a truncated graph cannot show what changed). Real jail.

A truncated trace still reports its outputs' ranks and dtypes, from shorter forwards (jailed._shape_probe: the first
input's rows or steps cut), so the problem takes part in the rules that pair by ranks and constructor arguments: a
GRU written out by hand at other sizes (one Linear per gate and source) is rebuilt beside level3/39_GRU at its own
arguments, screened (its weights are the problem's in pieces) and run: a functional_match; the same cell with the
update gate's terms swapped is tried and not flagged."""

from __future__ import annotations

import json
import random

import pytest

from pipeline.decontam.calibration.paraphrase import equivalent, paraphrase, tied_outputs
from pipeline.decontam.settings import DecontamSettings
from pipeline.kernelbench import load_reference

LSTM, GRU_HIDDEN = "level3/36_LSTMHn", "level3/40_GRUHidden"


@pytest.fixture(scope="module")
def rnn_run(kernelbench_path, tmp_path_factory):
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    para = paraphrase(by_id[LSTM].code, ["functional"], random.Random(0))
    assert para is not None and equivalent(*tied_outputs(by_id[LSTM].code, para))
    # the same LSTM, its output doubled: another function (a new composition around a KernelBench RNN)
    other = para.code.replace("return state[0]", "return state[0] * 2.0")
    assert other != para.code
    settings = DecontamSettings(
        semantic=True, workers=2, semantic_cache_dir=str(tmp_path_factory.mktemp("semcache-rnn"))
    )
    rows = decontaminate([("para", para.code), ("other", other)], [by_id[LSTM], by_id[GRU_HIDDEN]], settings)
    return {r["task_id"]: r for r in rows.to_pylist()}


def test_rnn_paraphrase_is_confirmed_through_its_truncated_view(rnn_run):
    r = rnn_run["para"]
    assert r["semantic_status"] == "truncated", r
    assert r["contaminated"] and r["reason"] == "functional_match" and r["nearest_ref"] == LSTM, r


def test_rnn_that_computes_something_else_is_not_flagged(rnn_run):
    r = rnn_run["other"]
    assert r["semantic_status"] == "truncated", r
    assert not r["contaminated"] and r["reason"] == "" and not r["near_variant"], (r["reason"], r["evidence"][:400])


GRU_BY_HAND = """
import math
import torch
import torch.nn as nn


class GateCell(nn.Module):
    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.in_r, self.in_u, self.in_c = (nn.Linear(n_in, n_hidden) for _ in range(3))
        self.rec_r, self.rec_u, self.rec_c = (nn.Linear(n_hidden, n_hidden) for _ in range(3))

    def forward(self, x, h):
        reset = torch.sigmoid(self.in_r(x) + self.rec_r(h))
        update = torch.sigmoid(self.in_u(x) + self.rec_u(h))
        cand = torch.tanh(self.in_c(x) + reset * self.rec_c(h))
        return (1 - update) * cand + update * h


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        sizes = [input_size] + [hidden_size] * (num_layers - 1)
        self.layers = nn.ModuleList(GateCell(n, hidden_size) for n in sizes)

    def forward(self, x, h0):
        steps = [x[t] for t in range(x.shape[0])]
        for k, cell in enumerate(self.layers):
            h, outs = h0[k], []
            for s in steps:
                h = cell(s, h)
                outs.append(h)
            steps = outs
        return torch.stack(steps)


def get_inputs():
    return [torch.rand(6, 4, 20), torch.rand(2, 4, 24)]


def get_init_inputs():
    return [20, 24, 2]
"""
# An LSTM kept as one ParameterList per source and kind (input maps, recurrent maps, their biases), one entry per
# layer and gate (i, f, g, o), resized: its source order lists every layer's input maps before any recurrent one,
# and past the first layer both are (H, H). It returns the last cell state of every layer, as level3/37_LSTMCn,
# whose `fc` layer builds weights the output never reads.
LSTM_LISTS = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.n, self.hidden = num_layers, hidden_size
        self.w_in, self.w_rec = nn.ParameterList(), nn.ParameterList()
        self.b_in, self.b_rec = nn.ParameterList(), nn.ParameterList()
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size
            for _ in "ifgo":
                self.w_in.append(nn.Parameter(torch.randn(hidden_size, width) * 0.2))
                self.w_rec.append(nn.Parameter(torch.randn(hidden_size, hidden_size) * 0.2))
                self.b_in.append(nn.Parameter(torch.zeros(hidden_size)))
                self.b_rec.append(nn.Parameter(torch.zeros(hidden_size)))

    def gate(self, k, x, h):
        return x @ self.w_in[k].T + self.b_in[k] + h @ self.w_rec[k].T + self.b_rec[k]

    def forward(self, x, h0, c0):
        finals = []
        for layer in range(self.n):
            h, c, outs, k = h0[layer], c0[layer], [], 4 * layer
            for t in range(x.shape[1]):
                xt = x[:, t]
                i, f = torch.sigmoid(self.gate(k, xt, h)), torch.sigmoid(self.gate(k + 1, xt, h))
                g, o = torch.tanh(self.gate(k + 2, xt, h)), torch.sigmoid(self.gate(k + 3, xt, h))
                c = f * c + i * g
                h = o * torch.tanh(c)
                outs.append(h)
            x = torch.stack(outs, dim=1)
            finals.append(c)
        return torch.stack(finals)


def get_inputs():
    return [torch.rand(3, 5, 12), torch.rand(2, 3, 20), torch.rand(2, 3, 20)]


def get_init_inputs():
    return [12, 20, 2, 7, 0.0]
"""
# level3/34_VanillaRNNHidden at its own constructor arguments on a shorter sequence and smaller batch, its input
# Linear over [x, h] kept as an input and a recurrent matrix, stored (in, out), the read-out applied once to the
# stacked states: neither its input shapes nor its parameter sizes are the problem's (same_init_max pairs them).
RNN_SAME_ARGS = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.w_x = nn.Parameter(torch.randn(input_size, hidden_size) * 0.02)
        self.w_h = nn.Parameter(torch.randn(hidden_size, hidden_size) * 0.02)
        self.b = nn.Parameter(torch.zeros(hidden_size))
        self.readout = nn.Linear(hidden_size, output_size)

    def forward(self, x, h):
        drive = torch.tensordot(x, self.w_x, dims=1) + self.b
        states = []
        for t in range(x.shape[0]):
            h = torch.tanh(drive[t] + h @ self.w_h)
            states.append(h)
        return self.readout(torch.stack(states))


def get_inputs():
    return [torch.rand(5, 3, 1024), torch.rand(3, 256)]


def get_init_inputs():
    return [1024, 256, 128]
"""
# Another function: the update gate keeps the candidate where the GRU keeps the state.
SWAPPED = GRU_BY_HAND.replace("(1 - update) * cand + update * h", "update * cand + (1 - update) * h")


@pytest.fixture(scope="module")
def decided(kernelbench_path, tmp_path_factory):
    from pipeline.decontam.semantic import semantic_views
    from pipeline.decontam.stage import decontaminate

    assert SWAPPED != GRU_BY_HAND
    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ids = ("level3/39_GRU", "level3/40_GRUHidden", "level3/37_LSTMCn", "level3/34_VanillaRNNHidden", "level1/19_ReLU")
    ref = [by_id[i] for i in ids]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path_factory.mktemp("truncated")))
    cands = [("by_hand", GRU_BY_HAND), ("swapped", SWAPPED), ("lstm_lists", LSTM_LISTS), ("rnn_args", RNN_SAME_ARGS)]
    rows = decontaminate(cands, ref, settings).to_pylist()
    off = settings.model_copy(update={"same_init_max": 0})
    rows += decontaminate([("rnn_args_off", RNN_SAME_ARGS + "\n# off\n")], ref, off).to_pylist()
    views = semantic_views([r.code for r in ref[:2]], settings)  # from the cache the run filled
    return rows, views


def test_a_truncated_problem_reports_its_outputs_ranks(decided):
    _, views = decided
    gru, hidden = views
    assert gru.ok and gru.truncated and hidden.truncated, (gru.status, hidden.status)
    # the outputs (steps, batch, hidden) and h_n (layers, batch, hidden): rank 3 either way, from a forward with
    # the sequence cut to 2 steps (its sizes are the shorter forward's)
    assert gru.sig["shape_probe"] == [[[2, 10, 256], "float32"]], gru.sig.get("shape_probe")
    assert hidden.sig["shape_probe"] == [[[6, 10, 256], "float32"]], hidden.sig.get("shape_probe")
    assert json.loads(gru.ranks_key)[:2] == [[[3, "float32"], [3, "float32"]], [[3, "float32"]]], gru.ranks_key
    assert gru.resize_key, "a truncated problem is rebuilt at candidates' constructor arguments"


def test_a_gru_written_by_hand_at_other_sizes_is_a_copy_of_the_truncated_problem(decided):
    rows, _ = decided
    row = rows[0]
    assert row["contaminated"] and row["reason"] == "functional_match", row
    ev = json.loads(row["evidence"])
    assert ev["ref"] == "level3/39_GRU" and ev["rebuilt_at"] == "[20, 24, 2]", ev
    assert all(m[2].startswith("split") for m in ev["mapping"]), ev["mapping"]  # each gate's piece of a packed weight


def test_the_same_cell_computing_another_function_is_not_flagged(decided):
    rows, _ = decided
    row = rows[1]
    assert row["reason"] != "functional_match", row
    tried = json.loads(row["evidence"])["tried"] if row["evidence"] else []
    assert any(t["ref"] == "level3/39_GRU" and t.get("rebuilt_at") for t in tried), tried  # it was tried, and differs
    assert not any(t["equivalent"] for t in tried), tried


def test_gate_weights_kept_in_lists_are_tied_in_the_order_the_forward_reads_them(decided):
    """The LSTM's per-gate maps are tied to slices of the problem's packed weights in the order each forward reads
    its tensors, each slice's pieces from one list (in source order, the second layer's input maps would fill the
    first layer's recurrent weight); the screen leaves the pair to the run although the problem's `fc` has no piece
    (its weights group into the problem's, some of those left whole)."""
    rows, _ = decided
    row = rows[2]
    assert row["contaminated"] and row["reason"] == "functional_match", row
    ev = json.loads(row["evidence"])
    assert ev["ref"] == "level3/37_LSTMCn" and ev["rebuilt_at"] == "[12, 20, 2, 7, 0.0]", ev
    tied = {m[0]: m[1] for m in ev["mapping"]}
    assert tied["w_in.4"] == "lstm.weight_ih_l1" and tied["w_rec.0"] == "lstm.weight_hh_l0", ev["mapping"]


def test_a_copy_at_its_problems_own_arguments_on_smaller_inputs_is_paired(decided):
    """An RNN at level3/34's own constructor arguments, run on a shorter sequence and a smaller batch, with its
    input Linear over [x, h] kept as two matrices stored (in, out): no input shape or parameter size of the
    problem's; paired because its constructor arguments are the problem's very values (same_init_max), and a
    functional_match (the two matrices tied as slices of the problem's `i2h`). Not paired with the rule off."""
    rows, _ = decided
    row = rows[3]
    assert row["contaminated"] and row["reason"] == "functional_match", row
    ev = json.loads(row["evidence"])
    assert ev["ref"] == "level3/34_VanillaRNNHidden" and ev["rebuilt_at"] is None, ev
    assert {m[0]: m[1] for m in ev["mapping"]}["w_h"] == "i2h.weight", ev["mapping"]
    assert not rows[4]["contaminated"], rows[4]
