from pydantic import BaseModel, Field


class DecontamSettings(BaseModel):
    """Contamination checks and near-duplicate removal (issue 6)."""

    num_perm: int = Field(128, description="MinHash permutations.")
    dedup_threshold: float = Field(0.9, description="Exact Jaccard above which two of our tasks are duplicates.")
