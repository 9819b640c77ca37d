import pyarrow as pa

from schemas._base import BOOL, I64, STR, STR_LIST, field, table_schema

SCHEMA = table_schema(
    "seed_operators",
    1,
    "Seed operators mined from torch (and transformers when installed) by introspection; each ran once.",
    [
        field("name", STR, "dotted call path, e.g. torch.nn.Conv2d, torch.nn.functional.gelu, torch.cumsum"),
        field(
            "source",
            STR,
            "namespace it was mined from: torch.nn | torch.nn.functional | torch | torch.linalg | "
            "torch.special | torch.fft | transformers",
        ),
        field(
            "kind",
            STR,
            "module category or measured behaviour: pointwise, binary_pointwise, reduction, scan, "
            "normalization, linalg, indexing, shape, convolution, pooling, activation, ...",
        ),
        field("is_module", BOOL, "an nn.Module class: constructed in __init__, called in forward"),
        field("arity", I64, "number of tensor inputs (1 or 2)"),
        field("other_shape", STR, "shape rule of the second tensor: '' | same | matmul"),
        field("ctor_args", STR, "JSON constructor kwargs; $C, $LAST, $COUT, $FOUT, $G symbols resolved per shape"),
        field("call_args", STR, "JSON call kwargs (same symbols)"),
        field("input_ranks", pa.list_(pa.int64()), "input ranks it ran on"),
        field("square", BOOL, "needs square trailing matrices"),
        field("dtypes", STR_LIST, "input dtypes it ran on"),
        field("output_index", I64, "-1: returns a tensor; else the index of the tensor in the returned tuple"),
        field("domain", STR, "input values it is finite on: any | positive | unit"),
        field("out_range", STR, "observed output values: any | positive | unit"),
        field("pointwise", BOOL, "each output element depends on one input element only (measured)"),
        field("stochastic", BOOL, "consumed the RNG or gave different outputs on two runs (measured)"),
        field("mode_dependent", BOOL, "output differed between train() and eval() (measured)"),
        field("composable", BOOL, "float, deterministic, mode-independent, non-scalar output: usable by the composer"),
        field("signature", STR, "the signature it was mined from"),
        field("note", STR, "why it is not composable, empty otherwise"),
    ],
)
