"""A record's JSON shape is declared once (evalcore.formats.shapes): its to_dict and the API's models agree with it.

Each record is built with every field filled (optional ones present) from its type hints alone, so a
field added to a record without its to_dict key, a to_dict key no field or JSON_EXTRA declares, or a
type the API model cannot take, fails here.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any

import pytest
from pydantic import ValidationError

from evalcore.api import routes_datasets, schemas
from evalcore.campaigns import Aggregate, Campaign, QuestionResult, Summary
from evalcore.campaigns.listing import CampaignRow, Settings
from evalcore.campaigns.question_labels import Label
from evalcore.campaigns.records import Outcome, Progress, Question, RunOptions, Source, Tokens, retrieved_to_json
from evalcore.campaigns.trust import ComparisonTrust
from evalcore.compare import Comparison
from evalcore.compare.deltas import CampaignHeader, MeasureDelta, Passage, QuestionDiff
from evalcore.compare.preference import Preference
from evalcore.compare.production import GroupComparison, PeriodFigures
from evalcore.compare.stats import McNemar
from evalcore.compare.sweep import SweepDelta
from evalcore.compare.unpaired import UnpairedDelta
from evalcore.diagnosis import Transition
from evalcore.documents import DocumentRead, ImportReport, Skipped
from evalcore.formats.shapes import doc, is_record, keys
from evalcore.gates import Check
from evalcore.judges import Claim, Spread, Verdict
from evalcore.judges.pairwise import Asking, PairVerdict
from evalcore.metrics.agreement import Agreement
from evalcore.suites import Case, Suite
from evalcore.targets.base import Retrieved
from evalcore.targets.saved_targets import SavedTarget
from evalcore.targets.target_config import Chunks, Retrieval, Snapshot
from evalcore.telemetry import Rejected, Trace, TraceDocument, TraceImport, TraceSettings

SCALARS: dict[Any, Any] = {bool: True, int: 2, float: 0.5, str: "x", Any: "any"}


def sample(tp: Any) -> Any:
    """A value of type tp with every optional part present."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return sample(next(arg for arg in args if arg is not type(None)))
    if isinstance(tp, type) and issubclass(tp, Enum):
        return next(iter(tp))
    if is_record(tp):
        return build(tp)
    if isinstance(tp, type) and issubclass(tp, dict):  # a configuration snapshot
        return tp({"kind": "rag", "retriever": "vector"})
    if origin is tuple:
        return (sample(args[0]),)
    if origin in (list, Sequence):
        return [sample(args[0])]
    if origin in (dict, Mapping):
        return {sample(args[0]): sample(args[1])}
    return SCALARS[tp]


def build(record: type) -> Any:
    """An instance of record with every field filled; hidden fields with a default keep it."""
    hints = typing.get_type_hints(record)
    if not dataclasses.is_dataclass(record):
        return record(*(sample(hints[name]) for name in record._fields))  # type: ignore[attr-defined]
    values = {f.name: sample(hints[f.name]) for f in dataclasses.fields(record)
              if not (f.metadata.get("hidden") and (f.default is not dataclasses.MISSING
                                                    or f.default_factory is not dataclasses.MISSING))}
    return record(**values)


def full_json(value: Any) -> dict[str, Any]:
    """What a record gives as JSON."""
    if isinstance(value, Retrieved):
        return retrieved_to_json(value)
    if isinstance(value, CampaignRow):  # the API puts the campaign's keys before the list's own
        return {**value.campaign.to_dict(), **value.to_dict()}
    data: dict[str, Any] = value.to_dict()
    return data


def disagreement(value: Any) -> tuple[set[str], set[str]]:
    """Keys declared but missing from the JSON, and keys in the JSON nobody declared."""
    declared, given = {key.name for key in keys(type(value))}, set(full_json(value))
    return declared - given, given - declared


RECORDS = (Campaign, RunOptions, Progress, Question, Source, Outcome, QuestionResult, Aggregate, Tokens, Summary,
           Verdict, Spread, Retrieved, CampaignHeader, Passage, QuestionDiff, McNemar, MeasureDelta, Comparison,
           Transition, Settings, CampaignRow, SavedTarget, Check, SweepDelta, Case, Label, Agreement, Preference,
           PairVerdict, Asking, ComparisonTrust, Suite,
           Claim, Skipped, DocumentRead, ImportReport,
           Trace, TraceDocument, Rejected, TraceImport, TraceSettings, PeriodFigures, UnpairedDelta, GroupComparison)
PRIVATE = {key.name for record in RECORDS for key in keys(record) if key.private}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_to_dict_gives_exactly_the_declared_keys(record: type) -> None:
    assert disagreement(build(record)) == (set(), set())


def public(data: Any) -> Any:
    """The JSON without the keys kept from API clients (as the API's faces drop them)."""
    if isinstance(data, dict):
        return {k: public(v) for k, v in data.items() if k not in PRIVATE}
    return [public(v) for v in data] if isinstance(data, list) else data


API_MODELS: dict[type, Callable[[], type[Any]]] = {
    Campaign: lambda: schemas.CampaignOut, QuestionResult: lambda: schemas.QuestionResultOut,
    Summary: lambda: schemas.SummaryOut, Aggregate: lambda: schemas.AggregateOut,
    Comparison: lambda: schemas.ComparisonOut, CampaignRow: lambda: schemas.CampaignListed,
    SavedTarget: lambda: schemas.TargetOut, Check: lambda: schemas.CheckOut, Label: lambda: schemas.LabelOut,
    Agreement: lambda: schemas.AgreementOut, Preference: lambda: schemas.PreferenceOut,
    ComparisonTrust: lambda: schemas.TrustOut, Suite: lambda: schemas.SuiteOut,
    ImportReport: lambda: routes_datasets.ImportReportOut,
}


@pytest.mark.parametrize("record", list(API_MODELS), ids=lambda r: r.__name__)
def test_the_api_model_takes_the_record_json_unchanged(record: type) -> None:
    data = json.loads(json.dumps(public(full_json(build(record)))))
    model = API_MODELS[record]()
    dumped = model.model_validate(data).model_dump(mode="json", exclude={"flat"})
    assert dumped == data
    assert list(dumped) == [key.name for key in keys(record) if not key.private]


def test_a_field_missing_from_either_side_is_found() -> None:
    @dataclasses.dataclass(frozen=True)
    class Drifted:
        kept: int = dataclasses.field(metadata=doc())
        forgotten: int = dataclasses.field(metadata=doc("added to the record, not to its to_dict"))

        def to_dict(self) -> dict[str, Any]:
            return {"kept": self.kept, "undeclared": 1}

    assert disagreement(Drifted(1, 2)) == ({"forgotten"}, {"undeclared"})
    model = schemas.model_of(Drifted)
    with pytest.raises(ValidationError):
        model.model_validate(Drifted(1, 2).to_dict())  # a key the record does not declare is refused


def test_optional_keys_are_left_out_when_absent_and_private_ones_never_shown() -> None:
    verdict = dataclasses.replace(build(Verdict), samples=None, spread=None)
    model = schemas.MODELS[Verdict]
    assert "samples" not in model.model_validate(verdict.to_dict()).model_dump(mode="json")
    assert "dataset_path" not in schemas.MODELS[RunOptions].model_fields
    assert schemas.CampaignOut.model_fields["status_code"].description.startswith("0 queued or pending")


def test_a_snapshot_keeps_the_stored_json_and_reads_older_ones_as_a_typed_configuration() -> None:
    # Written by an older version: a key since removed, a value no longer of its key's type, keys since added absent.
    stored = {"retriever": "vector", "embedding_model": "e5", "top_n": 7, "chunk_size": "wide", "reranker": "none"}
    snapshot = Snapshot(json.loads(json.dumps(stored)))
    assert json.dumps(snapshot.to_dict()) == json.dumps(stored)  # byte for byte
    target = snapshot.target
    assert target.retriever_label == "vector · E5 embeddings"
    assert target.chunks.chunk_size == Chunks.chunk_size
    assert Settings.of(target) == Settings("vector · E5 embeddings", "none", "extractive", Retrieval.embedding_top_k)
    campaign = dataclasses.replace(build(Campaign), config=stored)  # a plain dict becomes a snapshot
    assert isinstance(campaign.config, Snapshot)
    assert campaign.to_dict()["config"] == stored


def enum_of(tp: Any) -> type[Enum] | None:
    """The StrEnum a key's type is (or is with null), else None."""
    args = [arg for arg in typing.get_args(tp) if arg is not type(None)] or [tp]
    return args[0] if len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], Enum) else None


def test_a_key_with_a_fixed_value_set_documents_every_value() -> None:
    # A status, verdict, kind, stage or judge result added to its type and not to the docs fails here.
    checked = 0
    for record in RECORDS:
        for key in keys(record):
            if (values := enum_of(key.type)) is not None:
                spoken = key.doc.replace("_", " ")
                missing = [m.value for m in values if m.value.replace("_", " ") not in spoken]
                assert not missing, f"{record.__name__}.{key.name}: {missing} not in {key.doc!r}"
                checked += 1
    assert checked >= 5
