"""Arrow plumbing that keeps curation fast on big inputs: conversation columns are taken and sliced in Arrow, never
round-tripped through Python objects, and token-id lists are counted, not converted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Columns the filters never read as values: only their lengths matter (token ids) or nothing (the kernel files).
HEAVY = ("prompt_token_ids", "response_token_ids", "response_mask", "final_kernel")


def _drop_struct_field(col: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    """list<struct> without one struct field (the per-turn token ids of `turns`)."""
    arr = col.combine_chunks()
    if not pa.types.is_list(arr.type) or not pa.types.is_struct(arr.type.value_type):
        return col
    if name not in [f.name for f in arr.type.value_type]:
        return col
    vals = arr.values
    keep = [f for f in vals.type if f.name != name]
    mask = vals.is_null() if vals.null_count else None
    new_vals = pa.StructArray.from_arrays([vals.field(f.name) for f in keep], fields=keep, mask=mask)
    lmask = arr.is_null() if arr.null_count else None
    return pa.chunked_array([pa.ListArray.from_arrays(arr.offsets, new_vals, mask=lmask)])


def light_rows(tbl: pa.Table) -> tuple[list[dict[str, Any]], list[int | None]]:
    """(rows without the heavy columns, recorded token count per row or None)."""
    tokens: list[int | None] = [None] * tbl.num_rows
    found = False
    for name in tbl.column_names:
        if name.endswith("token_ids"):
            found = True
            lens = pc.fill_null(pc.list_value_length(tbl.column(name)), -1).to_numpy(zero_copy_only=False)
            for i, n in enumerate(lens):
                if n >= 0:
                    tokens[i] = (tokens[i] or 0) + int(n)
    light = tbl.drop_columns([c for c in HEAVY if c in tbl.column_names])
    if "turns" in light.column_names:
        light = light.set_column(
            light.column_names.index("turns"),
            "turns",
            _drop_struct_field(light.column("turns"), "completion_token_ids"),
        )
    return light.to_pylist(), tokens if found else [None] * tbl.num_rows


def json_lists(values: list[list[Any]]) -> pa.ListArray:
    """list<json> from Python lists of JSON-able items (Arrow cannot build extension values from Python objects)."""
    import json

    from schemas._chat import JSON

    flat = [json.dumps(v, ensure_ascii=False, default=str) for vs in values for v in vs]
    offsets = np.concatenate([[0], np.cumsum([len(vs) for vs in values], dtype=np.int64)]).astype(np.int32)
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.ExtensionArray.from_storage(JSON, pa.array(flat, pa.string()))
    )


def take_lists(arr: pa.ListArray, index: list[int]) -> pa.ListArray:
    return arr.take(pa.array(index, pa.int64())) if index else arr.slice(0, 0)


def prefixes(arr: pa.ListArray, index: list[int], lengths: list[int]) -> pa.ListArray:
    """For each (row index, n): the first n items of that row's list, built with one gather."""
    if not index:
        return arr.slice(0, 0)
    offsets = arr.offsets.to_numpy()
    starts = offsets[np.asarray(index, dtype=np.int64)].astype(np.int64)
    lens = np.asarray(lengths, dtype=np.int64)
    new_offsets = np.concatenate([[0], np.cumsum(lens)])
    flat = np.repeat(starts - new_offsets[:-1], lens) + np.arange(new_offsets[-1], dtype=np.int64)
    values = arr.values.take(pa.array(flat))
    return pa.ListArray.from_arrays(pa.array(new_offsets, pa.int32()), values)


def to_rows(tbl: pa.Table) -> list[dict[str, Any]]:
    """Rows with the JSON columns (messages, tools) decoded into objects, as `datasets.load_dataset` returns them."""
    import json

    rows = tbl.to_pylist()
    cols = [f.name for f in tbl.schema if pa.types.is_list(f.type) and isinstance(f.type.value_type, pa.JsonType)]
    for r in rows:
        for c in cols:
            if r[c] is not None:
                r[c] = [None if v is None else json.loads(v) for v in r[c]]
    return rows
