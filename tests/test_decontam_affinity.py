"""Confirmation jobs grouped by affinity (semantic._affinity, _order, _groups_of): candidates built at the same
constructor arguments go to one worker together, so that the problems rebuilt at those arguments are built, probed
and dry-run once. Only where and when a job runs changes: the jobs, and so every report, are the same."""

from __future__ import annotations

import json

from pipeline.decontam.semantic import _affinity, _groups_of, _order


def _sig(init=None, inputs=((8, 64),)) -> dict:
    sig = {"inputs": [[list(s), "float32"] for s in inputs], "outputs": [[[8, 16], "float32"]]}
    if init is not None:
        sig["init"] = ["l", [["i", v] for v in init]]
    return sig


def _job(sig: dict, n_pairs: int = 1) -> list:
    return ["confirm_many", "code", ["ref"] * n_pairs, [2] * n_pairs, sig]


def test_candidates_built_at_the_same_arguments_share_a_key_and_others_do_not():
    assert _affinity(_sig([64, 16])) == _affinity(_sig([64, 16], inputs=((4, 3, 32, 32),)))
    assert _affinity(_sig([64, 16])) != _affinity(_sig([64, 32]))
    # without constructor arguments: by inputs (the problems' dry runs on them)
    assert _affinity(_sig()) == _affinity(_sig())
    assert _affinity(_sig()) != _affinity(_sig(inputs=((8, 32),)))
    assert _affinity(_sig()) != _affinity(_sig([8, 64]))
    assert _affinity(None) == ""


def test_jobs_of_one_key_are_consecutive_largest_group_first_each_largest_first():
    sizes = [(1, 10), (2, 64), (1, 3), (3, 100), (2, 1), (1, 20)]  # (key, first input dim)
    jobs = [_job(_sig([k], inputs=((n, 8),))) for k, n in sizes]
    aff = [_affinity(j[4]) for j in jobs]
    order = _order(jobs, aff)
    assert sorted(order) == list(range(len(jobs)))
    keys = [sizes[i][0] for i in order]
    assert keys == [3, 2, 2, 1, 1, 1]  # the group of the largest job first
    assert [sizes[i][1] for i in order] == [100, 64, 1, 20, 10, 3]
    assert _order(jobs, None) == sorted(range(len(jobs)), key=lambda i: -sizes[i][1])
    # positions in a part of that order, run by run
    assert _groups_of(order, aff, 8) == [[0], [1, 2], [3, 4, 5]]
    assert _groups_of(order[2:], aff, 8) == [[0], [1, 2, 3]]
    assert _groups_of(order, None, 8) is None
    json.dumps(_groups_of(order, aff, 8))  # the worker's payload


def test_a_key_most_jobs_share_is_dealt_in_parts():
    """At most `most` jobs per group: candidates that all share one key still keep every worker busy."""
    jobs = [_job(_sig([7], inputs=((n, 8),))) for n in range(1, 11)]
    aff = [_affinity(j[4]) for j in jobs]
    order = _order(jobs, aff)
    groups = _groups_of(order, aff, 3)
    assert groups == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [order[n] for g in groups for n in g] == order
