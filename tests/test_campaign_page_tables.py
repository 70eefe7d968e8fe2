"""What the Campaigns and Run pages show, computed without a page: measure values, abstention and agreement lines,
label keys, JSON fields of the form."""

from __future__ import annotations

import pytest

from evalcore.campaigns import Aggregate
from evalcore.errors import EvalError
from evalcore.metrics.agreement import Agreement
from ui.campaign.tables import abstention_text, agreement_lines, key_help, measure_value
from ui.text import json_object


def test_a_rate_shows_as_a_share_of_its_questions_and_a_mean_as_a_number() -> None:
    assert measure_value("sources_found", Aggregate(0.5, 12)) == "50% of 12"
    assert measure_value("judge.groundedness:pass", Aggregate(0.25, 4)) == "25% of 4"
    assert measure_value("ndcg@10", Aggregate(0.61234, 12)) == "0.612"
    assert measure_value("ndcg@10", Aggregate(None, 0)) == "—"


def test_abstention_in_words_and_none_without_its_measures() -> None:
    assert abstention_text({}) is None
    text = abstention_text({"correct_abstention": Aggregate(0.5, 4), "false_abstention": Aggregate(0.1, 10)})
    assert text == ("declined 2 of 4 unanswerable questions (50%) · declined 1 of 10 answerable questions "
                    "(10% false abstention)")


def test_agreement_lines_say_a_missing_kappa_as_a_dash() -> None:
    agreement = Agreement(judge="groundedness", n=3, categories=("fail", "pass"), accuracy=1.0, kappa=None,
                          weighted_kappa=None, linear_kappa=None, interval=None, matrix=((1, 0), (0, 2)))
    assert agreement_lines({"groundedness": agreement}) == ["groundedness: 3 labelled · accuracy 1.00 · kappa —"]


def test_label_keys_name_their_label_only_when_it_differs() -> None:
    assert key_help({"1": "1", "pass": "p", "fail": "f"}) == "1, p pass, f fail"


@pytest.mark.parametrize(("text", "problem"), [("{", "not valid JSON"), ("[1]", "not a JSON object")])
def test_a_form_field_that_is_no_json_object_is_an_error_naming_it(text: str, problem: str) -> None:
    with pytest.raises(EvalError) as raised:
        json_object("agent_headers", text)
    assert problem in str(raised.value)
    assert "agent_headers" in str(raised.value)


def test_an_empty_json_field_is_an_empty_object() -> None:
    assert json_object("agent_headers", "") == {}
    assert json_object("agent_headers", '{"X-Key": "${KEY}"}') == {"X-Key": "${KEY}"}
