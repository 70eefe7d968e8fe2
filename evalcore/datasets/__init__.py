"""Datasets: five Parquet files validated whole by the loader, their statistics, and validated uploads."""

from evalcore.datasets.loader import (
    DATASET_ROOT,
    DEFAULT_DATASET,
    FILES,
    LABEL_COLUMNS,
    Dataset,
    DatasetStats,
    Passage,
    Question,
    dataset_stats,
    load_dataset,
    resolve_dataset,
)
from evalcore.datasets.uploads import list_datasets, upload_limit_mb, upload_name_problem, upload_root, validate_upload

__all__ = [
    "DATASET_ROOT", "DEFAULT_DATASET", "FILES", "LABEL_COLUMNS", "Dataset", "DatasetStats", "Passage", "Question",
    "dataset_stats",
    "list_datasets", "load_dataset", "resolve_dataset", "upload_limit_mb", "upload_name_problem", "upload_root",
    "validate_upload",
]
