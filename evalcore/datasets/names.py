"""The default dataset's folder name, apart from the loader: naming a dataset does not load pyarrow."""

from pathlib import PurePath

DEFAULT_DATASET = "samples"


def dataset_label(source: str) -> str:
    """A dataset campaign's source as people name it: the folder's name, `default` for the built-in sample."""
    name = PurePath(source).name
    return "default" if name == DEFAULT_DATASET else name
