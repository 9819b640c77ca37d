from schemas._base import BOOL, F64, I64, STR, field, table_schema

SCHEMA = table_schema(
    "contamination",
    3,
    "One row per candidate task: whether it copies a reference (KernelBench) problem, its nearest reference "
    "problem and every view's similarity (pipeline.decontam).",
    [
        field("task_id", STR, "the candidate's task_id"),
        field(
            "contaminated",
            BOOL,
            "true: drop this task, it is a (disguised) copy of nearest_ref, or it could "
            "not be judged (reason unparseable / empty_code): never clean",
        ),
        field("nearest_ref", STR, "nearest reference problem, 'levelN/<file stem>'; empty if none was scored"),
        field("score", F64, "decision score 0..1: 1 for an MD5 match, else max(min(canon, ops), raw) at nearest_ref"),
        field(
            "reason",
            STR,
            "exact_md5 | canonical_and_ops | same_ops_signature | raw_near_copy | "
            "functional_match | near_variant when contaminated; near_variant also when kept "
            "(near_variant_policy=keep); empty when clean; "
            "unparseable / empty_code when the code could not be judged (then contaminated is true)",
        ),
        field("canon_jaccard", F64, "best canonical-token-shingle Jaccard over all scored references"),
        field("ops_jaccard", F64, "best operator-signature n-gram Jaccard over all scored references"),
        field("raw_jaccard", F64, "best raw character-shingle Jaccard over all scored references"),
        field("nearest_canon", F64, "canonical-token-shingle Jaccard to nearest_ref"),
        field("nearest_ops", F64, "operator-signature Jaccard to nearest_ref"),
        field("nearest_raw", F64, "raw character-shingle Jaccard to nearest_ref"),
        field(
            "ast_similarity",
            F64,
            "difflib ratio of canonical AST node-type sequences vs nearest_ref (its "
            "quick_ratio upper bound when nearest_canon < 0.5)",
        ),
        field("md5_match", BOOL, "normalized MD5 (KernelBench Problem.hash) equals a reference's"),
        field("md5_ref", STR, "the reference with the same normalized MD5; empty if none"),
        field("parse_ok", BOOL, "the candidate parses as Python"),
        field("ops", STR, "the candidate's operator signature, ops joined by ' '"),
        field("lsh_hits", I64, "references returned by the MinHash LSH of any view"),
        field("lsh_recalled", BOOL, "nearest_ref is among the LSH hits (false: only exhaustive scoring found it)"),
        field("method", STR, "exact: scored against every reference; lsh: LSH hits verified by exact Jaccard"),
        field(
            "view",
            STR,
            "the view that fired: md5 | canon+ops | ops | raw | functional | semantic (near_variant); "
            "empty when none did",
        ),
        field(
            "semantic_score",
            F64,
            "semantic (traced core-ATen graph, WL-hash) Jaccard to semantic_ref; 0 when "
            "the semantic view did not run for this row",
        ),
        field("semantic_ref", STR, "the semantically nearest reference problem (or the functionally matched one)"),
        field(
            "semantic_status",
            STR,
            "traced | truncated (a forward of more than 4,000 ops, e.g. a looped RNN: its first ops, used only "
            "to pick problems for the functional confirmation) | not_run (another view decided, or semantic off) | "
            "why the trace failed (exception, timeout, jail_<reason> ...)",
        ),
        field(
            "near_variant",
            BOOL,
            "one or two changes of meaning from semantic_ref: semantically near, outputs "
            "differ (the difference is in evidence)",
        ),
        field(
            "evidence",
            STR,
            "JSON: functional evidence (max_abs_diff, ref_scale, tensor mapping, both "
            "normalized graphs), near_variant's difference, or the confirmations tried",
        ),
        field("reference_fingerprint", STR, "pipeline.kernelbench.fingerprint of the reference set"),
    ],
)
