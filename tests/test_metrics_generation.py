"""BLEU and ROUGE against sacreBLEU and rouge-score on random multilingual cases."""

from __future__ import annotations

import logging
import random
import tracemalloc
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from evalcore.errors import EvalError
from evalcore.language.text import tokenize
from evalcore.metrics import bleu_rouge, generation_scores
from evalcore.metrics.bleu_rouge import BLEU_ORDERS
from tests.conftest import require_c

# sacreBLEU warns on every sentence score without effective_order, which is what we compare to.
logging.getLogger("sacrebleu").setLevel(logging.ERROR)

WORDS = ["the", "a", "cat", "sat", "on", "mat", "of", "and", "is", "was", "dog", "café", "été", "naïve", "élève",
         "garçon", "où", "à", "les", "des", "3.14", "2,5", "42", "1867", "v2.4", "GHz", "Warsaw", "Paris", "北京",
         "天安门", "价格", "是", "研究", "生命", "起源", "我们", "模型"]
PUNCTUATION = ["", "", "", ",", ".", "!", "?", "。", "，"]


class Whitespace:
    """rouge-score tokenizer over our tokens (already split by the `default` tokenizer)."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()


def random_text(rng: random.Random) -> str:
    length = rng.choice([0, 1, 1, 2, 3, 5, 8, 12, 20])
    parts = [rng.choice(WORDS) + rng.choice(PUNCTUATION) for _ in range(length)]
    return rng.choice([" ", " ", ""]).join(parts)


def joined(text: str) -> str:
    return " ".join(tokenize(text))


@pytest.fixture(scope="module")
def oracles() -> tuple[dict[str, BLEU], rouge_scorer.RougeScorer]:
    bleus = {
        name: BLEU(tokenize="none", smooth_method="none", max_ngram_order=order, effective_order=False)
        for name, order in BLEU_ORDERS.items()
    }
    return bleus, rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], tokenizer=Whitespace())


def test_random_cases_equal_sacrebleu_and_rouge_score(oracles) -> None:  # type: ignore[no-untyped-def]
    bleus, rouge = oracles
    rng = random.Random(11)
    for case in range(1200):
        hyp = random_text(rng)
        refs = [random_text(rng) for _ in range(rng.choice([1, 1, 2, 3]))]
        if case % 10 == 0:
            refs[0] = hyp  # exact matches reach 1.0
        ours = generation_scores(hyp, refs)
        hyp_t, refs_t = joined(hyp), [joined(r) for r in refs]
        for name, bleu in bleus.items():
            assert ours[name] == pytest.approx(bleu.sentence_score(hyp_t, refs_t).score / 100, abs=1e-9), (hyp, refs)
        best = rouge.score_multi(refs_t, hyp_t)
        for name, key in (("rouge1", "rouge1"), ("rouge2", "rouge2"), ("rougel", "rougeL")):
            assert ours[name] == pytest.approx(best[key].fmeasure, abs=1e-9), (hyp, refs, name)


@pytest.mark.parametrize(("method", "value"),
                         [("floor", None), ("floor", 0.3), ("add-k", None), ("add-k", 2), ("exp", None)])
def test_smoothing_equals_sacrebleu(method: str, value: float | None) -> None:
    rng = random.Random(5)
    bleus = {
        name: BLEU(tokenize="none", smooth_method=method, smooth_value=value, max_ngram_order=order)
        for name, order in BLEU_ORDERS.items()
    }
    for _ in range(300):
        hyp, refs = random_text(rng), [random_text(rng) for _ in range(rng.choice([1, 2]))]
        ours = generation_scores(hyp, refs, smooth=method, smooth_value=value)
        for name, bleu in bleus.items():
            expected = bleu.sentence_score(joined(hyp), [joined(r) for r in refs]).score / 100
            assert ours[name] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("hyp", "refs", "expected"),
    [
        ("", ["the cat"], dict.fromkeys(("bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel"), 0.0)),
        ("the cat", [""], dict.fromkeys(("bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel"), 0.0)),
        # One word: no bigram, so BLEU-2 and BLEU-4 are 0 without smoothing.
        # Identical texts: exactly 1.0 (sacreBLEU's arithmetic gives 1.0000000000000004).
        ("a b", ["a b"], {"bleu1": 1.0, "bleu2": 1.0, "bleu4": 0.0, "rouge1": 1.0, "rouge2": 1.0, "rougel": 1.0}),
        ("cat", ["cat"], {"bleu1": 1.0, "bleu2": 0.0, "bleu4": 0.0, "rouge1": 1.0, "rouge2": 0.0, "rougel": 1.0}),
        # No overlap at all scores 0, never above (the upstream +1 smoothing bug).
        ("dog barks", ["cat sleeps"], dict.fromkeys(("bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel"), 0.0)),
        # Case and accents are words: CAFÉ equals café after case folding.
        ("Le CAFÉ est chaud", ["le café est chaud"],
         dict.fromkeys(("bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel"), 1.0)),
    ],
)
def test_hand_checked(hyp: str, refs: list[str], expected: dict[str, float]) -> None:
    scores = generation_scores(hyp, refs)
    assert scores == pytest.approx(expected, abs=1e-12)
    assert all(value <= 1.0 for value in scores.values())


def test_clipping_and_brevity() -> None:
    # "the the the" vs "the cat": unigram matches clip to 1 of 3; c = 3 >= r = 2 so BP = 1.
    assert generation_scores("the the the", ["the cat"])["bleu1"] == pytest.approx(1 / 3)
    # A short hypothesis is penalised with the closest reference length (2 here, not 6).
    short = generation_scores("the cat", ["the cat", "the cat sat on the mat"])
    assert short["bleu1"] == pytest.approx(1.0)


def test_no_reference_is_an_error() -> None:
    with pytest.raises(EvalError):
        generation_scores("an answer", [])


@pytest.mark.parametrize(
    ("hyp", "refs", "message"),
    [
        # A bare string used to be scored as one reference per character (rouge1 0.67 here).
        ("a b", "a b", "references must be a list of strings"),
        ("a b", ["a b", None], "references must be a list of strings"),
        (None, ["a b"], "the hypothesis must be a string"),
    ],
)
def test_wrong_types_are_clear_errors(hyp: object, refs: object, message: str) -> None:
    with pytest.raises(EvalError, match=message):
        generation_scores(hyp, refs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("hyp", "refs"),
    [
        ("I love 🍕 and 🎉🎉 parties 👍", ["I love 🍕 and parties"]),
        ("東京に行きました。とても楽しかったです。", ["東京へ行きました。楽しかったです。"]),
        ("저는 학생입니다. 한국어를 공부해요.", ["저는 학생이에요. 한국어를 공부합니다."]),
        ("価格は１２３４円です", ["価格は1234円です"]),
        ("See https://example.com/a-b?x=1&y=2 for details", ["Details at https://example.com/a-b"]),
        ("state-of-the-art well-known e-mail", ["state of the art well known email"]),
        ("l'été, don't won’t can't", ["L’été, do not"]),
        ("!!! ... ???", ["the answer"]),
        ("the answer", ["!!! ... ???", "answer"]),
        ("3.14 3,14 1,000,000 v2.4.1 192.168.0.1", ["3.14 and 1,000,000"]),
        ("Ｈｅｌｌｏ　Ｗｏｒｌｄ ﬁnance", ["hello world finance"]),
    ],
)
def test_unseen_scripts_and_symbols_equal_the_oracles(oracles, hyp: str,
                                                      refs: list[str]) -> None:  # type: ignore[no-untyped-def]
    bleus, rouge = oracles
    ours = generation_scores(hyp, refs)
    hyp_t, refs_t = joined(hyp), [joined(r) for r in refs]
    for name, bleu in bleus.items():
        assert ours[name] == pytest.approx(bleu.sentence_score(hyp_t, refs_t).score / 100, abs=1e-9)
    best = rouge.score_multi(refs_t, hyp_t)
    for name, key in (("rouge1", "rouge1"), ("rouge2", "rouge2"), ("rougel", "rougeL")):
        assert ours[name] == pytest.approx(best[key].fmeasure, abs=1e-9)


def test_long_answers_lcs_is_exact() -> None:
    # 3,000 tokens each: a quadratic table would be slow; the bit-parallel LCS must stay exact.
    rng = random.Random(2)
    hyp = [rng.choice("abcdefgh") for _ in range(3000)]
    ref = [rng.choice("abcdefgh") for _ in range(3000)]
    table = [0] * (len(ref) + 1)
    for word in hyp:  # the textbook dynamic programme, one row at a time
        diagonal = 0
        for j, other in enumerate(ref, start=1):
            diagonal, table[j] = table[j], diagonal + 1 if word == other else max(table[j], table[j - 1])
    assert generation_scores(" ".join(hyp), [" ".join(ref)])["rougel"] == pytest.approx(table[-1] / 3000, abs=1e-12)


def textbook_lcs(first: list[str], second: list[str]) -> int:
    table = [0] * (len(second) + 1)
    for word in first:  # the dynamic programme, one row at a time
        diagonal = 0
        for j, other in enumerate(second, start=1):
            diagonal, table[j] = table[j], diagonal + 1 if word == other else max(table[j], table[j - 1])
    return table[-1]


def test_the_lcs_is_exact_when_few_masks_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long text keeps a few match masks and rebuilds the others (from a few positions, or many)."""
    monkeypatch.setattr(bleu_rouge, "SHORT_TEXT", 16)
    monkeypatch.setattr(bleu_rouge, "KEPT_MASKS", 3)
    rng = random.Random(5)
    words = [f"w{i}" for i in range(60)]
    for length in (17, 200, 700):
        hyp = [rng.choice(words[:8]) if rng.random() < 0.5 else rng.choice(words) for _ in range(length)]
        ref = [rng.choice(words[:8]) if rng.random() < 0.5 else rng.choice(words) for _ in range(length - 5)]
        expected = textbook_lcs(hyp, ref) / length, textbook_lcs(hyp, ref) / (length - 5)
        assert generation_scores(" ".join(hyp), [" ".join(ref)])["rougel"] == pytest.approx(
            2 * expected[0] * expected[1] / (expected[0] + expected[1]), abs=1e-12)


def test_scoring_a_long_reply_of_distinct_characters_takes_memory_linear_in_its_length() -> None:
    """60,000 Chinese characters, 30,000 of them distinct: one match mask as wide as the reply per distinct
    character took 2,150 bytes per character (quadratic: 1.5 GB at 199,000); now a few hundred."""
    from evalcore import metrics
    from evalcore.language.text import clear_caches as clear_token_caches
    from evalcore.metrics.bleu_rouge import clear_caches

    reply = "".join(chr(0x4E00 + (i if i < 30000 else i * 7919 % 30000)) for i in range(60000))
    def score(answer: str) -> metrics.Scores:
        return metrics.score_question(metrics.Inputs(answer=answer, references=["退款期限是三十天"],
                                                     expected_answer="三十天"))

    score(answer="退款期限 refund")  # the Chinese dictionary is loaded once per process: not the reply's
    clear_caches()
    clear_token_caches()
    tracemalloc.start()
    try:
        scores = score(answer=reply)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0 < scores.values["rougel"] < 0.01, peak / len(reply)
    assert peak < 800 * len(reply), peak / len(reply)


def test_unknown_smoothing_is_an_error() -> None:
    with pytest.raises(EvalError):
        generation_scores("a b c", ["a b c"], smooth="magic")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=12), st.lists(st.sampled_from(WORDS), max_size=12),
       st.lists(st.sampled_from(WORDS), max_size=12))
def test_bounds_symmetry_and_more_references(hyp: list[str], ref: list[str], other: list[str]) -> None:
    hyp_text, ref_text, other_text = " ".join(hyp), " ".join(ref), " ".join(other)
    one = generation_scores(hyp_text, [ref_text])
    assert all(0.0 <= value <= 1.0 for value in one.values())  # exactly: BLEU is clamped
    swapped = generation_scores(ref_text, [hyp_text])
    for name in ("rouge1", "rouge2", "rougel"):  # F1 does not care which side is the reference
        assert one[name] == pytest.approx(swapped[name])
    more = generation_scores(hyp_text, [ref_text, other_text])
    for name in ("rouge1", "rouge2", "rougel"):  # the best reference can only get better
        assert more[name] >= one[name]


def _clipped(hyp: list[str], ref: list[str], n: int) -> int:
    """Clipped n-gram overlap from counters of token tuples, as the definitions say."""
    def grams(words: list[str]) -> Counter[tuple[str, ...]]:
        return Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))

    ours, theirs = grams(hyp), grams(ref)
    return sum(min(seen, theirs[gram]) for gram, seen in ours.items())


def _clipped_against_all(hyp: list[str], refs: list[list[str]], n: int) -> int:
    most: Counter[tuple[str, ...]] = Counter()
    for ref in refs:
        for gram, seen in Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1)).items():
            most[gram] = max(most[gram], seen)
    ours = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
    return sum(min(seen, most[gram]) for gram, seen in ours.items())


# Few distinct words, so that n-grams repeat, and words the references may not hold.
_FEW = st.text(alphabet="abcé北", min_size=1, max_size=2)


@settings(max_examples=500, deadline=None)
@given(st.lists(_FEW, max_size=25), st.lists(st.lists(_FEW, max_size=25), min_size=1, max_size=3))
def test_packed_ngrams_count_as_the_tokens_themselves(hyp: list[str], refs: list[list[str]]) -> None:
    # An n-gram is its tokens' numbers packed into one integer; the clipped counts are those of the tokens.
    references = bleu_rouge.references_from(refs)
    profile = references.profile(hyp)
    correct, total, length, _ = bleu_rouge.bleu_statistics(profile, references)
    assert correct == [_clipped_against_all(hyp, refs, n) for n in range(1, 5)]
    assert total == [max(0, len(hyp) - n) for n in range(4)]
    assert length == len(hyp)
    for ref, ref_profile in zip(refs, references.profiles, strict=True):
        for n in (1, 2, 3, 4):
            assert bleu_rouge._overlap(profile.ngrams[n - 1], ref_profile.ngrams[n - 1]) == _clipped(hyp, ref, n)


@settings(max_examples=500, deadline=None)
@given(st.lists(_FEW, max_size=25), st.lists(st.lists(_FEW, max_size=25), min_size=1, max_size=3),
       st.sampled_from(["none", "floor", "add-k", "exp"]))
def test_an_answer_scored_from_its_tokens_gets_its_profiles_values(hyp: list[str], refs: list[list[str]],
                                                                   smooth: str) -> None:
    # The measures match an answer's n-grams against the references' without collecting them into a profile.
    references = bleu_rouge.references_from(refs)
    expected = bleu_rouge.generation_profiles_scores(references.profile(hyp), references, smooth)
    assert bleu_rouge.answer_scores(hyp, references, smooth) == expected


def test_packed_ngrams_of_a_large_vocabulary_stay_distinct() -> None:
    # Words drawn from 5,000 (3,514 distinct): 12 bits a word, 48 for a 4-gram; the answer shares some.
    rng = random.Random(3)
    refs = [[f"w{rng.randrange(5000)}" for _ in range(3000)] for _ in range(2)]
    hyp = [rng.choice(refs[rng.randrange(2)]) if rng.random() < 0.8 else f"x{rng.randrange(50)}" for _ in range(2000)]
    hyp[100:140] = refs[0][500:540]
    references = bleu_rouge.references_from(refs)
    assert references.width == len(references.vocabulary).bit_length() == 12  # 3,514 distinct words
    correct, *_ = bleu_rouge.bleu_statistics(references.profile(hyp), references)
    assert correct == [_clipped_against_all(hyp, refs, n) for n in range(1, 5)]
    assert correct[3] >= 37


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=15), st.lists(st.lists(st.sampled_from(WORDS), max_size=15),
                                                               min_size=1, max_size=3))
def test_scores_are_the_formulas_on_the_counts_bit_for_bit(hyp: list[str], refs: list[list[str]]) -> None:
    # The six values are the same float operations on the same integers: equal, not close.
    hyp_text, ref_texts = " ".join(hyp), [" ".join(ref) for ref in refs]
    words, ref_words = tokenize(hyp_text), [tokenize(text) for text in ref_texts]
    correct = [_clipped_against_all(words, ref_words, n) for n in range(1, 5)]
    total = [max(0, len(words) - n) for n in range(4)]
    ref_length = min((abs(len(ref) - len(words)), len(ref)) for ref in ref_words)[1]
    expected = bleu_rouge.bleu_from_logs(bleu_rouge.log_precisions(correct, total), correct, len(words), ref_length)
    for n, name in ((1, "rouge1"), (2, "rouge2")):
        expected[name] = max(bleu_rouge._f1(_clipped(words, ref, n), max(0, len(words) - n + 1),
                                            max(0, len(ref) - n + 1)) for ref in ref_words)
    scores = generation_scores(hyp_text, ref_texts)
    assert {name: value for name, value in scores.items() if name != "rougel"} == expected


def _random_words(rng: random.Random, size: int) -> list[str]:
    """Tokens of random English, French and Chinese text, or a few distinct words (n-grams repeat), or none."""
    if rng.random() < 0.4:
        few = rng.sample(WORDS, rng.choice([1, 2, 3]))
        return [rng.choice(few) for _ in range(rng.randint(0, size))]
    words = [rng.choice(WORDS) + rng.choice(PUNCTUATION) for _ in range(rng.randint(0, size))]
    return tokenize(rng.choice([" ", ""]).join(words))


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_counts_are_the_sets(seed: int) -> None:
    # The compiled loop's counts (overlaps.c) equal the sets' (`_set_counts`) and the definitions' on random
    # answers and 1-3 references: empty ones, repeated n-grams, three scripts, up to the longest it takes.
    require_c(bleu_rouge.overlaps_library())
    rng = random.Random(f"overlaps-{seed}")
    compared = 0
    for case in range(700):
        size = rng.choice([0, 3, 12, 40, bleu_rouge.COMPARED_TEXT])
        refs = [_random_words(rng, size)[:bleu_rouge.COMPARED_TEXT] for _ in range(rng.randint(1, 3))]
        hyp = _random_words(rng, rng.choice([0, 5, 40, bleu_rouge.COMPARED_TEXT]))[:bleu_rouge.COMPARED_TEXT]
        references = bleu_rouge.references_from(refs)
        numbers = [references.vocabulary.get(word, 0) for word in hyp]
        found = bleu_rouge._compiled_counts(numbers, references)
        assert found is not None
        correct, rouge1, rouge2, common = found
        sets = bleu_rouge._set_counts(numbers, hyp, references)
        assert (correct, rouge1, rouge2) == sets[:3], case
        assert correct == [_clipped_against_all(hyp, refs, n) for n in range(1, 5)], case
        assert rouge1 == [_clipped(hyp, ref, 1) for ref in refs], case
        assert rouge2 == [_clipped(hyp, ref, 2) for ref in refs], case
        assert max(bleu_rouge._f1(length, len(hyp), len(ref)) for length, ref in zip(common, refs, strict=True)) \
            == sets[3], case
        compared += bool(hyp) and any(correct)
    assert compared > 200  # a third of the cases or more share words with their references


@pytest.mark.parametrize("seed", range(2))
def test_answers_score_the_same_with_and_without_the_compiled_counts(seed: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    require_c(bleu_rouge.overlaps_library())
    rng = random.Random(f"answers-{seed}")
    cases = []
    for _ in range(400):
        refs = [_random_words(rng, rng.choice([0, 8, 30])) for _ in range(rng.randint(1, 3))]
        cases.append((_random_words(rng, rng.choice([0, 10, 60, bleu_rouge.COMPARED_TEXT + 40])), refs,
                      rng.choice(["none", "floor", "add-k", "exp"])))
    compiled = [bleu_rouge.answer_scores(hyp, bleu_rouge.references_from(refs), smooth) for hyp, refs, smooth in cases]
    monkeypatch.setattr(bleu_rouge, "overlaps_library", lambda: None)
    assert compiled == [bleu_rouge.answer_scores(hyp, bleu_rouge.references_from(refs), smooth)
                        for hyp, refs, smooth in cases]


def test_texts_longer_than_the_compiled_loop_takes_are_counted_by_the_sets() -> None:
    references = bleu_rouge.references_from([["a"] * 3])
    assert bleu_rouge._compiled_counts([1] * (bleu_rouge.COMPARED_TEXT + 1), references) is None
    assert bleu_rouge._compiled_counts([1], bleu_rouge.references_from([["a"] * (bleu_rouge.COMPARED_TEXT + 1)])) \
        is None
