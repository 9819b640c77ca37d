"""opforge: the library. Stages are plain functions over records and Arrow tables; no Prefect in here."""

__version__ = "0.1.0"
