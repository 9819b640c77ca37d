from typing import Literal

from pydantic import BaseModel, Field


class DecontamSettings(BaseModel):
    """Contamination checks and near-duplicate removal (issue 6). Thresholds: see README.md (Decontamination)."""

    num_perm: int = Field(128, description="MinHash permutations.")
    seed: int = Field(1, description="MinHash permutation seed (signatures are comparable only with equal seeds).")
    scheme: Literal["affine32", "affine64", "legacy"] = Field("affine32", description="datasketch 2.0 scheme.")
    canon_shingle: int = Field(5, description="Tokens per shingle of the canonical view.")
    ops_ngram: int = Field(3, description="Longest n-gram of the operator-signature view.")
    raw_shingle: int = Field(5, description="Characters per shingle of the raw view.")
    lsh_threshold: float = Field(0.5, description="LSH threshold of the canonical and raw views (recall side).")
    lsh_threshold_ops: float = Field(0.5, description="LSH threshold of the operator-signature view.")
    exact_max_refs: int = Field(
        5000,
        description="References up to this size are also scored exactly against every problem, not only the LSH hits.",
    )
    threshold: float = Field(
        0.7,
        description="Contaminated when min(canonical, operator-signature) Jaccard to "
        "one reference problem reaches this (calibrated, README.md "
        "(Decontamination)).",
    )
    ops_threshold: float = Field(
        0.95,
        description="Also contaminated when the operator-signature Jaccard reaches "
        "this (the same ordered ops: the same problem written anew) and",
    )
    canon_floor: float = Field(
        0.25,
        description="... the canonical Jaccard is at least this (a task of the same "
        "kind; restructured copies scored 0.29-0.6 against their source).",
    )
    raw_threshold: float = Field(
        0.9,
        description="Code that does not parse is contaminated when its raw "
        "character-shingle Jaccard to a reference reaches this.",
    )
    semantic: bool = Field(
        False,
        description="Also compare what tasks compute: the semantic view (traced core ATen "
        "graphs; validation carries each valid task's trace) and functional confirmation "
        "(docs/contamination.md). Off by default: with the traces validation carries, 6,000 new "
        "tasks take about 4.8x the views alone on 2 cores (their confirmations: most pairs "
        "screened in the jailed workers, the few that must run forked per candidate), 2.5x with the "
        "six settings that widen the confirmed pairs at 0 (rebuilt_max, realign_max, same_shapes_max, "
        "same_ranks_max, probe_max, same_init_max), which loses most rewrites at other sizes "
        "(docs/contamination.md: speed against recall); a re-check (confirmations cached) is within 1.5x.",
    )
    semantic_threshold: float = Field(
        0.5,
        description="Semantic (graph) Jaccard from which a reference problem is "
        "a candidate for functional confirmation.",
    )
    semantic_top_k: int = Field(
        3,
        description="Reference problems confirmed per candidate: the semantically "
        "nearest ones, plus those with the same input shapes, at most this.",
    )
    same_inputs_floor: float = Field(
        0.3,
        description="Problems with the candidate's input shapes are also "
        "confirmed when their semantic Jaccard is at least this.",
    )
    same_shapes_max: int = Field(
        20,
        ge=0,
        description="Problems with the candidate's input and output shapes and dtypes are also confirmed "
        "whatever their semantic Jaccard (a rewritten op leaves little of a small graph), nearest "
        "first, at most this many.",
    )
    same_ranks_max: int = Field(
        3,
        ge=0,
        description="Problems whose inputs and outputs have the candidate's ranks and dtypes and whose parameters "
        "have its element counts, sizes aside, are also confirmed whatever their semantic Jaccard (a rewrite that "
        "also resized its inputs: a convolution through unfold at another length), nearest first, at most this "
        "many (0: off).",
    )
    probe_max: int = Field(
        3,
        ge=0,
        description="Weightless problems (activations, reductions, pools, losses) whose outputs on fixed small "
        "inputs of the candidate's ranks equal the candidate's (its trace's probe) are also confirmed whatever their "
        "semantic Jaccard, nearest first, at most this many (0: off).",
    )
    rebuilt_max: int = Field(
        3,
        ge=0,
        description="Problems rebuilt at the candidate's constructor arguments (get_init_inputs: the same number "
        "and kinds of plain values, other values) whose inputs and outputs have the candidate's ranks and dtypes are "
        "also confirmed, nearest first, at most this many (0: off): a copy resized through its constructor (other "
        "channels, kernel size, stride, layer widths) matches the problem built at its sizes. Such a pair runs only "
        "where the rebuilt problem has the candidate's parameter count and output shapes (on meta).",
    )
    realign_max: int = Field(
        1,
        ge=0,
        description="Problems rebuilt at the candidate's constructor arguments where the candidate dropped or added "
        "one or two of them (an argument fixed as a constant of the task, a new one with a default): the "
        "candidate's values in the places their kinds align to (one or two alignments), the problem's own values in "
        "the rest; with its input and output ranks and dtypes and a semantic Jaccard of at least "
        "realign_min_similarity, nearest first, at most this many (0: off).",
    )
    realign_min_similarity: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="The semantic Jaccard a problem needs to be rebuilt at a candidate's arguments aligned "
        "(realign_max).",
    )
    same_init_max: int = Field(
        3,
        ge=0,
        description="Problems whose constructor arguments are the candidate's very values (KernelBench's own: "
        "[128, 256, 6, 10, 0.0]) and whose inputs and outputs have its ranks and dtypes are also confirmed as they "
        "are, whatever their semantic Jaccard, nearest first, at most this many (0: off): a copy run on smaller "
        "inputs with its weights reorganized shares neither input shapes nor parameter sizes with its problem.",
    )
    structure_threshold: float = Field(
        0.999,
        description="semantic_structure: a candidate whose whole graph has at least this semantic Jaccard to a "
        "problem's whole graph (the same ops, operands and bucketed constants: sizes aside) is a copy when the "
        "problem's model could not take the candidate's inputs (a rewrite at other sizes: no run can compare "
        "them) and their reductions run over the same axes (over other axes: a near_variant). Above 1: off.",
    )
    structure_min_ops: int = Field(
        4,
        ge=0,
        description="semantic_structure (and its near_variant over other axes) reads only problems of at least "
        "this many primitive ops after decomposition: a smaller graph (a Linear and an activation, one "
        "convolution) is what independent tasks are built of, so at other sizes its structure alone tells no "
        "rewrite from a new task; such pairs are decided by a run (the problem rebuilt at the candidate's "
        "arguments, or taking its inputs).",
    )
    near_variant_threshold: float = Field(
        0.5,
        description="near_variant: semantic Jaccard at least this to a "
        "problem whose outputs differ on the same inputs, and ...",
    )
    near_variant_changes: int = Field(
        1,
        description="... 1 to this many ops (with their dims and constants) "
        "changed in place against it, as many added as removed "
        "(counted as called, or as decomposed when fewer).",
    )
    near_variant_min_kept: int = Field(
        3,
        description="... and where an op itself is swapped (not only its dims or "
        "constants), at least this many of the problem's ops unchanged.",
    )
    near_variant_policy: Literal["remove", "keep"] = Field(
        "remove",
        description="What a near_variant decision does: remove (contaminated=true, the default, as "
        "CUDA Agent's AST-similarity rule would) or keep (reported, not removed).",
    )
    confirm_atol: float = Field(
        1e-4,
        description="Functional confirmation: outputs equal within atol * min(1, s) + rtol * s, s = max|reference "
        "output| (the absolute term shrinks with outputs under 1: two functions of tiny outputs are not one).",
    )
    confirm_rtol: float = Field(1e-4, description="See confirm_atol.")
    confirm_max_numel: int = Field(
        20_000_000,
        description="Functional confirmation runs the first 2 rows of a "
        "batch; inputs (elements) still above this are not run.",
    )
    trace_timeout_s: float = Field(20.0, description="Time limit of one task's trace (in the jail).")
    confirm_timeout_s: float = Field(30.0, description="Time limit of one functional confirmation (in the jail).")
    semantic_memory_mb: int = Field(8192, description="Memory limit of a jailed tracing/confirmation process.")
    semantic_cache_dir: str = Field(
        "",
        description="Cache of traced views (content-addressed by code); empty: "
        "$XDG_CACHE_HOME/opforge/decontam-semantic.",
    )
    workers: int = Field(1, description="Processes that compute views when Ray is not running (1: in-process).")

    dedup_threshold: float = Field(0.9, description="Exact Jaccard above which two of our tasks are duplicates.")
    dedup_view: Literal["canon", "raw"] = Field("canon", description="View compared by dedup.")
    dedup_keep: Literal["first", "shortest", "longest", "smallest_id"] = Field(
        "smallest_id",
        description="Which task of a duplicate cluster is kept: first in input order, shortest or "
        "longest code, or smallest task_id (ties broken by task_id).",
    )
    dedup_shard_size: int = Field(20000, description="Tasks per shard of the partitioned (Ray) dedup.")
    dedup_max_bucket: int = Field(
        2000,
        description="Buckets larger than this are verified against their "
        "first member only (keeps pair counts linear).",
    )
