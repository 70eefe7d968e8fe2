"""evalcore: the engine of the RAG evaluation workbench (datasets, measures, targets, campaigns)."""

__version__ = "0.1.0"
