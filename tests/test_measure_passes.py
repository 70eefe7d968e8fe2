"""Measures computed together by one pass over a question's inputs (`Measure.together`)."""

from __future__ import annotations

from evalcore.metrics import registry
from evalcore.metrics.measure import Inputs, Measure


def test_a_measure_of_a_pass_takes_its_value_from_the_pass_made_once_per_question() -> None:
    calls: list[Inputs] = []

    def both(inputs: Inputs) -> dict[str, float | None]:
        calls.append(inputs)
        return {"first": 0.25, "second": None}

    first = Measure("first", "a share.", "python", together=both)
    second = Measure("second", "a share.", "python", together=both)
    inputs = Inputs(answer="a")
    assert first.compute is not None
    assert second.compute is not None
    assert first.compute(inputs) == 0.25
    assert second.compute(inputs) is None
    assert len(calls) == 1


def test_score_question_gives_the_measures_in_registry_order() -> None:
    scores = registry.score_question(Inputs(relevant={1: 1, 2: 0}, ranked=[2, 1, 3], answer="the cat sat",
                                            references=["the cat sat on the mat"], answerable=True))
    order = [m.name for m in registry.COMPUTED if m.name in scores.values]
    assert list(scores.values) == order
    assert list(scores.signatures) == order


def test_the_runs_hold_every_computed_measure_once_in_order() -> None:
    assert [m for run in registry.RUNS for m in run.measures] == registry.COMPUTED
