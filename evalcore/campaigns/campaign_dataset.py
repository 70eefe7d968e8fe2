"""The dataset a campaign runs on: loaded (and, on resume, checked unchanged), found again where it was loaded
from, named in an evaluation task's id, and the label scale of its graded retrieval."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.campaigns.records import Campaign, Question
from evalcore.datasets import Dataset, load_dataset
from evalcore.errors import EvalError
from evalcore.metrics.graded import GradedScale

if TYPE_CHECKING:
    from evalcore.targets import TargetConfig


def load_corpus(ref: str, expected_hash: str | None, root: Path | None = None) -> Dataset:
    """Load a dataset (an id under `root`, default dataset/, or a path); when resuming, refuse one whose content
    changed."""
    dataset = load_dataset(ref, root)
    if expected_hash and dataset.content_hash != expected_hash:
        raise EvalError(
            "the dataset changed since this campaign started", where=ref,
            found=dataset.content_hash[:12], expected=expected_hash[:12],
            fix="launch a new campaign: results on two versions of a dataset cannot be mixed",
        )
    return dataset


def stored_dataset_path(campaign: Campaign) -> str:
    """Where the campaign's dataset was last loaded from; EvalError saying how to point at a moved one."""
    path = campaign.options.dataset_path
    if path is None or not Path(path).is_dir():
        raise EvalError("the campaign's dataset folder is gone", where=path,
                        fix="give its new location (same content) with --dataset PATH")
    return path


def dataset_tag(ref: str) -> str:
    """The dataset id as it appears in an evaluation task's id (the folder name for a path)."""
    name = str(ref).rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or "dataset"
    return re.sub(r"[^A-Za-z0-9.-]+", "-", name)


def graded_scale(dataset: Dataset, config: TargetConfig) -> GradedScale | None:
    """The label scale of graded retrieval when the dataset's qrels are graded (a label above 1), else None.

    The top of the scale is graded_label_max, or the dataset's highest label; EvalError when a
    label falls outside the configured scale.
    """
    labels = [label for q in dataset.questions for label in q.labels.values()]
    if not labels or max(labels) <= 1:
        return None
    low, high = config.graded.graded_label_min, config.graded.graded_label_max or max(labels)
    outside = sorted({label for label in labels if not low <= label <= high})
    if outside or high <= low:
        raise EvalError("the dataset's qrels labels fall outside the graded scale", where="graded_label_max",
                        found=f"labels {min(labels)}..{max(labels)}", expected=f"labels within {low}..{high}",
                        fix="set graded_label_min/graded_label_max to the scale the labels use")
    return GradedScale(low, high, dict(config.graded.graded_thresholds))


def graded_for(dataset: Dataset, config: TargetConfig, questions: list[Question]) -> GradedScale | None:
    """The graded scale of a campaign asking `questions` (None when none of them has a relevant passage)."""
    return graded_scale(dataset, config) if any(q.relevant for q in questions) else None
