"""The `eval` section of the config: a pydantic model derived field by field from `options.EvalOptions` (the one
definition; the GPU worker imports that dataclass without pydantic)."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from pipeline.evaluate.options import DEFAULTS, FIELDS, TYPES


class _EvalBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def as_worker_dict(self) -> dict[str, Any]:
        """The plain dict the worker side reads (`options.resolve` checks it again there)."""
        return self.model_dump()


def _field(f) -> tuple[Any, Any]:
    meta = f.metadata
    tp = Literal[meta["choices"]] if "choices" in meta else TYPES[f.name]
    bounds = {k: meta[k] for k in ("ge", "le") if k in meta}
    if isinstance(DEFAULTS[f.name], list):
        return tp, Field(default_factory=f.default_factory, description=meta["doc"], **bounds)
    return tp, Field(f.default, description=meta["doc"], **bounds)


EvalSettings = create_model(
    "EvalSettings", __base__=_EvalBase, __module__=__name__, **{f.name: _field(f) for f in FIELDS}
)
EvalSettings.__doc__ = (
    "Kernel evaluation harness. The GPU-side code receives these as a plain dict "
    "(`as_worker_dict`); the fields are defined once in `pipeline.evaluate.options.EvalOptions`."
)
