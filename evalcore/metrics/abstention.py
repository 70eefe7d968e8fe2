"""Abstention: whether an answer declines, and the three measures of declining well.

A question is unanswerable only when its question set marks it: an expected or reference answer
that is an explicit marker (`UNANSWERABLE_MARKERS`), or a dataset's `answerable` column set to
false; the right behaviour is then to decline. No expected answer is no reference, not a mark. An answer
declines (`is_refusal`) when it is empty, starts with the target's `fallback_answer`, or when
its first sentence (after apologies such as "Sorry."; within its first `OPENING_CHARS`) holds one
of the `REFUSALS` phrasings and no contrast word ("but", "mais", "但是") follows the phrasing in
that sentence: "I don't know Paris well, but the answer is 30 days" answers. Matching is on folded text
(case and accents removed, `evalcore.language.text.fold`). The phrasing list is versioned
(`REFUSALS_VERSION`, recorded in the measures' signatures): a change to it gets a new version, never an edit in place.

Measures (1/0 per question, present only where they apply): `correct_abstention` (unanswerable
question, the answer declines), `hallucination` (unanswerable question, the answer does not
decline) and `false_abstention` (answerable question, the answer declines). Their means are the
correct abstention rate, the hallucination rate and the false abstention rate. When the `refusal`
judge runs and reads the answer (pass: it declines; fail: it answers), its reading replaces the
phrasing list, and the signatures say `match:judge` instead of `match:fold`.
"""

from __future__ import annotations

import functools
import re

from evalcore.language.text import fold_once, sentences_of
from evalcore.metrics.measure import Inputs, Measure

REFUSALS_VERSION = "1"

_CONTEXT_EN = r"(?:the |this )?(?:provided |given |available )?(?:context|documents?|passages?|sources?|texts?)"
_VERB_EN = r"(?:find|answer|determine|locate|provide|tell|say|see|confirm|identify)"
_SUBJECT_FR = r"(?:le |ce |les |ces )?(?:contexte|documents?|passages?|textes?|sources?)(?: fournis?)?"
_CONTEXT_ZH = r"(?:上下文|资料|文档|文件|材料|段落|提供的信息|给定的信息|参考信息)"

# One phrasing per line, matched on folded text (apostrophes made straight). Each is specific to
# declining: "cannot find" alone would also match "the R5 cannot find 5 GHz networks".
REFUSALS: dict[str, tuple[str, ...]] = {
    "en": (
        r"\bi (?:do not|don't|dont|really don't) know\b",
        r"\bi(?: am|'m) not sure\b",
        r"\b(?:i|we) (?:cannot|can't|can not|could not|couldn't|am unable to|'m unable to|was unable to|"
        r"am not able to|'m not able to) " + _VERB_EN + r"\b",
        r"\b(?:unable to|not able to|cannot|can't|can not) answer\b",
        r"\bcannot be (?:answered|determined|found)\b",
        r"\b" + _CONTEXT_EN + r" (?:does not|doesn't|do not|don't|did not) (?:contain|mention|include|provide|"
        r"specify|say|state|give|cover|answer)\b",
        (r"\bnot (?:mentioned|found|provided|specified|stated|available|included|covered|given) in the "
        r"(?:provided |given |available )?(?:context|documents?|passages?|sources?|texts?)\b"),
        r"\bnot in the (?:provided |given |available )?(?:context|documents?|passages?|sources?)\b",
        (r"\b(?:there is|there's|i have|i found|contains?|provides?|with) no "
         r"(?:relevant |such |specific )?information\b"),
        r"\bno (?:relevant |such |specific )?information (?:is |was )?(?:available|provided|given|found)\b",
        r"\b(?:not enough|insufficient) information\b",
        (r"\b(?:i|we) (?:do not|don't|does not|doesn't) have (?:enough |any |the |that |this |such )?"
        r"(?:relevant |specific )?information\b"),
    ),
    "fr": (
        r"\bje ne (?:le )?sais pas\b",
        r"\bje ne (?:peux|parviens) pas (?:a )?(?:repondre|trouver|dire|determiner|preciser|confirmer)\b",
        (r"\bje (?:ne suis pas en mesure|suis incapable|n'ai pas pu) (?:de |d')?(?:repondre|trouver|dire|"
        r"determiner|preciser|confirmer)\b"),
        r"\bje ne trouve pas\b",
        r"\bje n'ai (?:pas|aucune) (?:d'|assez d')?informations?\b",
        r"\baucune information (?:n'|ne |sur |concernant |a ce sujet|dans |disponible|pertinente|ne permet)",
        r"\bpas d'informations? (?:sur|concernant|a ce sujet|dans|disponibles?)\b",
        r"\b" + _SUBJECT_FR + r" ne (?:mentionnen?t?|contien(?:nen)?t|precisen?t?|disen?t|indiquen?t?|donnen?t?|"
        r"fournissen?t?|fournit|permet(?:tent)?|traiten?t?) pas\b",
        (r"\bn'(?:est|sont) pas (?:mentionnee?s?|precisee?s?|indiquee?s?|fournie?s?) dans (?:le|les) "
        r"(?:contexte|documents?|passages?|textes?)\b"),
        r"\bpas dans (?:le|les) (?:contexte|documents?|passages?)\b",
        r"\bimpossible de (?:repondre|trouver|determiner|dire|preciser)\b",
    ),
    "zh": (
        r"无法回答", r"不能回答", r"无法确定", r"无法找到", r"找不到相关", r"没有找到相关", r"未找到相关",
        r"没有相关(?:的)?信息", r"无相关信息", r"我不知道", r"不知道答案", r"信息不足", r"没有足够的信息",
        _CONTEXT_ZH + r"(?:中|里)?(?:并)?(?:没有|未|没)(?:提到|提及|包含|提供|说明|涉及|给出|相关)",
    ),
}
# A contrast after the phrasing, in the same sentence, means an answer follows it.
CONTRAST = re.compile(r"\b(?:but|however|although|though|mais|cependant|toutefois|pourtant|neanmoins)\b"
                      r"|但|不过|然而|可是")
# A first sentence made only of an apology is skipped: the refusal is in the next one.
APOLOGY = re.compile(r"^(?:(?:i'm |i am |we're |we are )?sorry|unfortunately|desolee?|malheureusement|pardon|"
                     r"抱歉|对不起|很抱歉|不好意思)[\s.!,。！，]*$")
# An expected answer that says "no answer exists" (a suite case), compared after folding.
UNANSWERABLE_MARKERS = ("(unanswerable)", "[unanswerable]", "(no answer)", "[no answer]")

# One search for all phrasings; the word boundary every Latin one starts with is tested once per position.
_PHRASINGS = re.compile(r"\b(?:" + "|".join(p.removeprefix(r"\b")
                                            for language in ("en", "fr") for p in REFUSALS[language])
                        + ")|" + "|".join(REFUSALS["zh"]))
# Every phrasing holds one of these cues: a sentence with none (most answers) is not searched.
_CUES = ("know", "sure", "can", "could", "unable", "able", "answer", "information", "context", "document", "passage",
         "source", "text", "sais", "peux", "parviens", "mesure", "incapable", "n'ai", "trouve", "impossible", "无法",
         "不能", "找不到", "没有", "未", "无相关", "不知道", "信息", "上下文", "资料", "文档", "文件", "材料", "段落")
# Only the opening sentences are read: an answer of 200,000 characters is not split whole.
OPENING_CHARS = 2000
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_CURLY = tuple(map(chr, _APOSTROPHES))


def normalize(text: str) -> str:
    """Folded text (case, accents) with straight apostrophes and single spaces: what phrasings match."""
    folded = fold_once(text)
    if any(map(folded.__contains__, _CURLY)):  # translating looks each character up: most texts have none to change
        folded = folded.translate(_APOSTROPHES)
    return " ".join(folded.split())


def has_cue(text: str) -> bool:
    """Whether the (normalized) text holds a cue of some phrasing: without one, it cannot decline in words."""
    return any(map(text.__contains__, _CUES))


def declines(sentence: str) -> bool:
    """A refusal phrasing in this (normalized) sentence with no contrast word after it."""
    if not has_cue(sentence):
        return False
    for match in _PHRASINGS.finditer(sentence):
        if not CONTRAST.search(sentence, match.end()):
            return True
    return False


def is_refusal(answer: str, fallback_answer: str = "") -> bool:
    """Whether the answer declines: empty, the fallback answer, or a refusal phrasing (see the module)."""
    text = normalize(answer.lstrip()[:OPENING_CHARS])
    fallback = _fallback_opening(fallback_answer) if fallback_answer else ""
    if not text or (fallback and text.startswith(fallback)):
        return True
    if not has_cue(text):
        return False
    sentences = sentences_of(text)  # only the opening ones are split off: an apology, then what it says
    first = next(sentences, None)
    while first is not None and APOLOGY.match(first):
        following = next(sentences, None)
        if following is None:
            break
        first = following
    return first is not None and declines(first)


@functools.lru_cache(maxsize=4)
def _fallback_opening(fallback_answer: str) -> str:
    """The normalized fallback answer without its closing punctuation (a campaign's questions share one)."""
    return normalize(fallback_answer).rstrip(".!?。！？ ")


def is_unanswerable_marker(expected_answer: str | None) -> bool:
    """Whether an expected answer is one of UNANSWERABLE_MARKERS (case and spaces ignored)."""
    return expected_answer is not None and normalize(expected_answer) in UNANSWERABLE_MARKERS


def abstention_scores(answer: str | None, answerable: bool | None, fallback_answer: str = "",
                      refused_by_judge: bool | None = None) -> dict[str, float]:
    """The abstention measures that apply: none without an answer or when answerability is unknown.

    `refused_by_judge` (the refusal judge's reading) replaces the phrasing list when given.
    """
    if answer is None or answerable is None:
        return {}
    declined = is_refusal(answer, fallback_answer) if refused_by_judge is None else refused_by_judge
    refused = 1.0 if declined else 0.0
    if answerable:
        return {"false_abstention": refused}
    return {"correct_abstention": refused, "hallucination": 1.0 - refused}


def _of_question(inputs: Inputs) -> dict[str, float]:
    return abstention_scores(inputs.answer, inputs.answerable, inputs.fallback_answer)


def _declare(name: str, doc: str, in_words: str, higher_is_better: bool = True) -> Measure:
    """A 1/0 abstention measure, present only on the questions it applies to."""
    return Measure(name, doc + " Refusal: evalcore.metrics.abstention.", "abstention", binary=True,
                   higher_is_better=higher_is_better, needs=("answer", "answerable"), in_words=in_words,
                   settings=(("refusals", REFUSALS_VERSION), ("match", "fold")),
                   together=_of_question,
                   checked="tables of answers and refusals in English, French and Chinese")


DECLARED = (
    _declare("correct_abstention", "1 when the answer to an unanswerable question declines, else 0; the mean is the "
             "correct abstention rate (negative rejection rate, Chen et al. 2024, RGB).",
             "declined {n} of {of} unanswerable questions ({rate:.0%})"),
    _declare("hallucination", "1 when an unanswerable question gets an answer instead of a refusal, else 0; the mean "
             "is the hallucination rate (1 - correct_abstention on the same questions).",
             "answered {n} of them anyway ({rate:.0%} hallucination)", higher_is_better=False),
    _declare("false_abstention", "1 when the answer to an answerable question declines, else 0; the mean is the false "
             "abstention (over-refusal) rate (Feng et al. 2024, Don't Hallucinate, Abstain).",
             "declined {n} of {of} answerable questions ({rate:.0%} false abstention)", higher_is_better=False),
)
