"""The default dataset's folder name, apart from the loader: naming a dataset does not load pyarrow."""

DEFAULT_DATASET = "samples"
