"""Prefect flows: thin wrappers over the library's stage functions."""
