"""Suite measures (coverage, sources_found) and the registry (names, signatures, aggregation)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.errors import EvalError
from evalcore.language.text import fold, is_han, tokenize
from evalcore.metrics import (
    MEASURES,
    Inputs,
    aggregate,
    coverage,
    important_words,
    score_question,
    signature,
    sources_found,
)


@pytest.mark.parametrize(
    ("expected", "words"),
    [
        ("The refund window is 30 days.", ["refund", "window", "30", "days"]),
        ("Le délai est de 14 jours à Paris.", ["delai", "14", "jours", "paris"]),
        ("路由器的默认地址是什么", ["路由器", "默认", "地址"]),
        ("It is on", []),
    ],
)
def test_important_words(expected: str, words: list[str]) -> None:
    assert important_words(expected) == words


@pytest.mark.parametrize(
    ("answer", "expected", "value"),
    [
        ("Refunds: 30 DAYS window.", "The refund window is 30 days.", 0.75),  # "refunds" != "refund"
        ("Le DELAI est de 14 jours", "Le délai est de 14 jours.", 1.0),
        ("默认的地址是192.168.8.1", "路由器的默认地址是192.168.8.1", 0.75),  # 路由器 missing
        ("anything", "it is on", None),
        ("", "thirty days", 0.0),
    ],
)
def test_coverage(answer: str, expected: str, value: float | None) -> None:
    assert coverage(answer, expected) == (None if value is None else pytest.approx(value))


SOURCES = [
    {"id": 12, "title": "Conditions Générales de Vente (CGV).pdf"},
    {"id": "a7", "title": "Règlement intérieur"},
    {"id": None, "title": "Untitled upload"},
]


@pytest.mark.parametrize(
    ("expected", "found"),
    [
        (["cgv"], True),
        (["reglement interieur", "12"], True),
        (["A7"], True),
        (["1"], False),  # ids match whole, titles partly
        (["none"], False),  # a source without an id is not the id "None"
        (["cgv", "tarifs"], False),
        ([], None),
        (["  "], None),
    ],
)
def test_sources_found(expected: list[str], found: bool | None) -> None:
    assert sources_found(expected, SOURCES) is found


def test_score_question_includes_what_applies() -> None:
    result = score_question(Inputs(
        relevant={1: 2, 2: 0}, ranked=[None, 1], answer="30 days", references=["30 days"],
        expected_answer="30 days", expected_sources=["cgv"], retrieved_sources=SOURCES,
    ))
    scores, signatures = result.values, result.signatures
    assert signatures == {name: signature(name) for name in scores}
    assert scores["mrr"] == 0.5
    assert scores["bleu1"] == pytest.approx(1.0)
    assert scores["coverage"] == 1.0
    assert scores["sources_found"] == 1.0
    bare = score_question(Inputs(references=["x"]))
    assert bare.values == {}
    assert bare.signatures == {}


def test_registry_entries_document_themselves() -> None:
    for name in ("precision", "recall", "ndcg@3", "ndcg@10", "mrr", "map", "bleu1", "bleu2", "bleu4",
                 "rouge1", "rouge2", "rougel", "coverage", "sources_found", "graded.holes"):
        measure = MEASURES[name]
        assert measure.doc
        assert measure.signature.startswith(name + "|")
    assert MEASURES["graded.holes"].higher_is_better is False


def test_signatures() -> None:
    assert signature("bleu4") == "bleu4|tok:default|smooth:none|version:0.1.0"
    assert signature("bleu4", smooth="exp") == "bleu4|tok:default|smooth:exp|version:0.1.0"
    with pytest.raises(EvalError):
        signature("bleu5")
    with pytest.raises(EvalError):
        signature("bleu4", stemming="porter")


def test_aggregate_skips_absent_values() -> None:
    assert aggregate([1.0, None, 0.0, math.nan]) == (0.5, 2)
    assert aggregate([]) == (None, 0)


def test_the_registry_says_which_measures_judge_each_side_and_fill_the_question_table() -> None:
    from evalcore.metrics import judged_by, question_columns

    assert judged_by("retrieval") == ("ndcg@10",)
    assert judged_by("generation") == ("judge.score", "rougel")
    assert question_columns() == ("recall", "mrr", "ndcg@10", "rougel", "coverage", "sources_found", "judge.score")


EXACT = [  # (answer, expected texts, exact match), by hand
    ("30 days", ["30 days"], True),
    ("30 Days.", ["30 days"], True),  # case and punctuation dropped
    ("  thirty   days!", ["30 days", "thirty days"], True),  # any reference
    ("30 days, from delivery", ["30 days"], False),  # more words is not an exact match
    ("the 30 days", ["30 days"], False),  # articles count (their removal is English-only)
    ("Le délai est de 30 jours.", ["le delai est de 30 jours"], True),  # accents folded
    ("L'été", ["l ete"], True),  # an apostrophe splits words as the text measures do
    ("30 jours ouvrés", ["30 jours"], False),
    ("退款期限是三十天。", ["退款期限是三十天"], True),  # full-width punctuation dropped
    ("退款期限 是 三十天", ["退款期限是三十天"], True),  # spaces between Han characters do not count
    ("退款期限是三十日", ["退款期限是三十天"], False),
    ("三十天", ["退款期限是三十天"], False),
    ("anything", ["", "?!"], None),  # nothing to match against
]


@pytest.mark.parametrize(("answer", "expected", "matched"), EXACT)
def test_exact_match_on_a_hand_made_table_in_three_languages(answer: str, expected: list[str],
                                                             matched: bool | None) -> None:
    from evalcore.metrics.expected_answer import exact_match

    assert exact_match(answer, expected) is matched


def test_exact_match_is_a_pass_fail_measure_of_every_question_with_a_reference() -> None:
    scored = score_question(Inputs(answer="Trente jours.", references=["30 jours", "trente jours"]))
    assert scored.values["exact_match"] == 1.0
    assert scored.signatures["exact_match"].startswith("exact_match|tok:default|match:fold|refs:any|version:")
    # The expected answer, when there is one, is what the answer should say.
    assert score_question(Inputs(answer="30 jours", references=["30 jours"], expected_answer="un mois")).values[
        "exact_match"] == 0.0
    assert "exact_match" not in score_question(Inputs(answer="30 jours")).values
    assert "exact_match" not in score_question(Inputs(answer="x", references=["30 jours"], answerable=False)).values
    measure = MEASURES["exact_match"]
    assert (measure.binary, measure.family, measure.higher_is_better, measure.needs_reference) == (
        True, "generation", True, True)


# Words of three languages, accents, combining marks, digits with points and commas, punctuation, and a few odd
# characters (compatibility forms, a letter beyond the Basic Multilingual Plane).
_PIECES = st.sampled_from(["the", "Refund", "window", "30", "3,5", "2.4", "délai", "ÉTÉ", "Noe\u0308l", "naïve", "ﬁle",
                           "Straße", "路由器", "的", "默认地址", "设备重置", "。", "，", " ", " ", ".", "Ⅻ",
                           "\U0001d400bc", "e\u0301", "œuvre", "ǅ", "İstanbul", "ﾊﾝ", "①", "\u093f"])
_TEXTS = st.lists(_PIECES, max_size=14).map("".join)


def _plain_folded(text: str) -> list[str]:
    return [fold(word) for word in tokenize(text)]


def _plain_coverage(answer: str, expected: str) -> float | None:
    from evalcore.metrics.expected_answer import _important

    wanted = list(dict.fromkeys(word for word in _plain_folded(expected) if _important(word)))
    if not wanted:
        return None
    words, text = set(_plain_folded(answer)), fold(answer)
    return sum(word in words or (is_han(word) and word in text) for word in wanted) / len(wanted)


def _plain_normalized(text: str) -> tuple[str, ...]:
    return tuple(piece for word in _plain_folded(text) for piece in (word if is_han(word) else (word,)))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_characters="\0"), min_size=1, max_size=6), max_size=10))
def test_tokens_folded_as_one_text_are_each_token_folded(words: list[str]) -> None:
    # Coverage and exact match fold a text's tokens in one call over the tokens joined by U+0000.
    from evalcore.metrics.expected_answer import _fold_all

    assert _fold_all(tuple(words)) == tuple(map(fold, words))


@settings(max_examples=400, deadline=None)
@given(_TEXTS, _TEXTS, _TEXTS)
def test_coverage_and_exact_match_are_those_of_each_token_folded(answer: str, first: str, second: str) -> None:
    # The shared folded tokens give the values of the definitions, token by token, on random texts.
    from evalcore.metrics.expected_answer import exact_match, normalized

    for expected in (first, second):
        assert coverage(answer, expected) == _plain_coverage(answer, expected)
        assert normalized(expected) == _plain_normalized(expected)
    wanted = {words for words in map(_plain_normalized, (first, second)) if words}
    assert exact_match(answer, [first, second]) == ((_plain_normalized(answer) in wanted) if wanted else None)


@settings(max_examples=200, deadline=None)
@given(_TEXTS, _TEXTS)
def test_coverage_reads_the_same_foldings_when_its_word_tables_are_replaced(answer: str, expected: str) -> None:
    # Tokens' foldings and words' importance are kept in tables replaced by empty ones past a size: tiny tables
    # (replaced at nearly every text) give the definitions' values too.
    from evalcore.metrics import expected_answer

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(expected_answer, "_KEPT_WORDS", 2)
        expected_answer._short_folded.cache_clear()
        expected_answer._important_words.cache_clear()
        assert coverage(answer, expected) == _plain_coverage(answer, expected)
        assert expected_answer.normalized(expected) == _plain_normalized(expected)
