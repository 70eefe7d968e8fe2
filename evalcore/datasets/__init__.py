"""Datasets: five Parquet files validated whole by the loader, their statistics, and validated uploads."""

from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.datasets.loader import (
        DATASET_ROOT,
        FILES,
        LABEL_COLUMNS,
        SAMPLE_FOLDER,
        Dataset,
        DatasetStats,
        Passage,
        Question,
        dataset_stats,
        dataset_summary,
        load_dataset,
        resolve_dataset,
    )
    from evalcore.datasets.names import DEFAULT_DATASET
    from evalcore.datasets.uploads import (
        list_datasets,
        upload_limit_mb,
        upload_name_problem,
        upload_root,
        validate_upload,
    )

__all__ = [
    "DATASET_ROOT", "DEFAULT_DATASET", "FILES", "LABEL_COLUMNS", "SAMPLE_FOLDER", "Dataset", "DatasetStats", "Passage",
    "Question", "dataset_stats", "dataset_summary",
    "list_datasets", "load_dataset", "resolve_dataset", "upload_limit_mb", "upload_name_problem", "upload_root",
    "validate_upload",
]
# Imported on first use: naming the default dataset does not load the loader and pyarrow (evalcore.runtime.lazy).
__getattr__ = lazy_exports(__name__, {
    "names": ("DEFAULT_DATASET",),
    "loader": (
        "DATASET_ROOT", "FILES", "LABEL_COLUMNS", "Dataset", "DatasetStats", "Passage", "Question",
        "SAMPLE_FOLDER", "dataset_stats", "dataset_summary", "load_dataset", "resolve_dataset",
    ),
    "uploads": ("list_datasets", "upload_limit_mb", "upload_name_problem", "upload_root", "validate_upload"),
})
