"""Hindsight: layered memory for LLM agents."""

if __name__ != "hindsight":  # the folder is services/, the package is hindsight: one module state per file
    raise ImportError(f"import this package as 'hindsight', not as {__name__!r} (pip install -e . maps it)")

__version__ = "0.1.0"
