"""Arrow plumbing that keeps curation fast on big inputs: conversation columns are taken and sliced in Arrow, never
round-tripped through Python objects, and token-id lists are counted, not converted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas._chat import MESSAGES

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
        light = light.set_column(light.column_names.index("turns"), "turns",
                                 _drop_struct_field(light.column("turns"), "completion_token_ids"))
    return light.to_pylist(), tokens if found else [None] * tbl.num_rows


def messages_array(tbl: pa.Table | None, rows: list[dict[str, Any]]) -> pa.ListArray | None:
    """The conversations as one list<message> Arrow array in the published type, or None if they do not fit it."""
    if tbl is not None and "messages" in tbl.column_names and tbl.column("messages").type.equals(MESSAGES):
        return tbl.column("messages").combine_chunks()
    try:
        return pa.array([r.get("messages") for r in rows], type=MESSAGES)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return None


def take_lists(arr: pa.ListArray, index: list[int]) -> pa.ListArray:
    return arr.take(pa.array(index, pa.int64())) if index else pa.array([], arr.type)


def prefixes(arr: pa.ListArray, index: list[int], lengths: list[int]) -> pa.ListArray:
    """For each (row index, n): the first n items of that row's list, built with one gather."""
    if not index:
        return pa.array([], arr.type)
    offsets = arr.offsets.to_numpy()
    starts = offsets[np.asarray(index, dtype=np.int64)].astype(np.int64)
    lens = np.asarray(lengths, dtype=np.int64)
    new_offsets = np.concatenate([[0], np.cumsum(lens)])
    flat = np.repeat(starts - new_offsets[:-1], lens) + np.arange(new_offsets[-1], dtype=np.int64)
    values = arr.values.take(pa.array(flat))
    return pa.ListArray.from_arrays(pa.array(new_offsets, pa.int32()), values)
