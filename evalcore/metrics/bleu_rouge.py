"""Sentence BLEU (orders 1, 2, 4) and ROUGE-1/2/L F1 over the `default` tokens.

BLEU follows Papineni et al. (2002) as sacreBLEU computes it: clipped n-gram counts against the
maximum count over all references, brevity penalty from the closest reference length (shorter
wins a tie), geometric mean of the precisions; smoothing methods of Chen & Cherry (2014).
ROUGE follows Lin (2004) as Google's rouge-score computes it, the best F1 over the references.
Each text's n-grams are computed once, then shared by the six measures; the LCS uses a
bit-parallel algorithm (Hyyro 2004) instead of a dynamic table. Its match masks (one integer as wide
as the shorter text per distinct token) are built during the LCS for the tokens the other text asks
for, and only a bounded number is kept at once on long texts, so memory stays linear in the length
(a reply of 70,000 distinct characters would otherwise hold gigabytes of masks).

How the n-grams are held, for speed: the references' distinct tokens are numbered from 1 (the answer's other
tokens are 0, and match nothing), and an n-gram is its tokens' numbers packed into one integer, each in as many
bits as the largest number needs: one distinct integer per n-gram of a given order, and one that can equal a
reference's only when all its tokens are the reference's. An integer hashes in a few instructions and is built by
`map` over shifts in C, where a joined string must be made and hashed. A text keeps the set of its distinct n-grams
plus the extra count of the few that repeat. The clipped overlap of two texts is then a set intersection in C,
corrected by the repeats. The counts, so the values, are those of the n-grams of the tokens themselves. Only
the last few reference sets are cached (the answers scored one after another against the same question reuse
them), never a campaign's worth: what is kept per question would grow with the campaign. A reference set works
out an order's n-grams when an answer first asks for them: an answer sharing no n-gram of an order shares none
of the higher ones, so those are never built for it. An answer is rarely scored twice, so its n-grams are never
collected into sets: those the references hold are picked from its packed list by a filter in C, and only they
are counted (`_set_counts`); its LCS with a reference reads the reference's match masks by token number.

Where the compiled loop is there (`overlaps.c`) and the texts are short (at most `COMPARED_TEXT` tokens each: nearly
every answer and reference), an answer's counts (BLEU's clipped matches, ROUGE-1's and ROUGE-2's overlaps, the LCS)
come from one call on the token numbers instead, the places holding the same token compared: no reference set is
built. The counts are the same integers, so the values are the same floats (a test compares both on random texts).
"""

from __future__ import annotations

import ctypes
import functools
import math
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate, chain, count, repeat
from operator import lshift, or_
from pathlib import Path
from typing import NamedTuple

from evalcore.errors import EvalError
from evalcore.language.text import TOKENIZER, tokens_once
from evalcore.metrics.measure import Inputs, Measure
from evalcore.runtime import compiled

GENERATION_MEASURES = ("bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel")
BLEU_ORDERS = {"bleu1": 1, "bleu2": 2, "bleu4": 4}
MAX_ORDER = 4
# Default smoothing values, as in sacreBLEU.
SMOOTHING = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}
# The LCS builds every match mask of a text up to this many tokens (at most SHORT_TEXT**2 bits, 2 MB),
# and keeps at most KEPT_MASKS masks of a longer one (the others are rebuilt when asked for again).
SHORT_TEXT = 4096
KEPT_MASKS = 64
# The compiled counts (`overlaps.c`) compare the places of the texts holding the same token: they take an answer and
# references of at most this many tokens each (nearly every answer), the sets below the rest. They read C's 32-bit
# integers, which an array of typecode "i" holds on every platform Python supports but the rarest.
COMPARED_TEXT = 256
_INT32 = array("i").itemsize == 4


class Grams(NamedTuple):
    """The distinct n-grams of one order (packed), and count - 1 of those seen more than once (or None)."""

    distinct: frozenset[int]
    repeats: Mapping[int, int] | None


class Profile(NamedTuple):
    """A text's tokens and its n-grams for n = 1..4, numbered in its question's references' vocabulary."""

    tokens: tuple[str, ...]
    ngrams: tuple[Grams, ...]


def _counted(grams: list[int]) -> Grams:
    distinct = frozenset(grams)
    if len(distinct) == len(grams):
        return Grams(distinct, None)
    # Repeats are few (mostly function words): each is counted as it comes back.
    repeats: dict[int, int] = {}
    seen: set[int] = set()
    for gram in grams:
        if gram in seen:
            repeats[gram] = repeats.get(gram, 0) + 1
        else:
            seen.add(gram)
    return Grams(distinct, repeats)


def _profile(words: tuple[str, ...], vocabulary: Mapping[str, int], width: int) -> Profile:
    """The profile of tokens: each token's number (0 when the references do not hold it), and each order's n-grams
    as the previous order's shifted left by `width` bits, or-ed with the next token's number."""
    numbers = list(map(vocabulary.get, words, repeat(0)))
    grams = [_counted(numbers)]
    packed = numbers
    for n in range(1, MAX_ORDER):
        packed = list(map(or_, map(lshift, packed, repeat(width)), numbers[n:]))
        grams.append(_counted(packed))
    return Profile(words, tuple(grams))


class References:
    """A question's references: their tokens, the numbering of those tokens that n-grams are packed with, and, per
    order, each reference's n-grams and each n-gram's largest count over them (BLEU clips against it). An order's
    n-grams are worked out when first asked for: an answer that shares no n-gram of an order with the references
    shares none of the higher orders (each holds one of that order), so those are never asked for."""

    __slots__ = ("_flat", "_masks", "_numbers", "_orders", "_packed", "lengths", "vocabulary", "width", "words")

    def __init__(self, words: tuple[tuple[str, ...], ...]) -> None:
        self.words = words
        self.lengths = tuple(map(len, words))
        self.vocabulary: Mapping[str, int] = dict(zip(dict.fromkeys(chain.from_iterable(words)), count(1)))
        self.width = max(1, len(self.vocabulary).bit_length())
        self._numbers = [list(map(self.vocabulary.__getitem__, text)) for text in words]
        self._packed = self._numbers  # the last order's packed n-grams, per reference
        self._orders: list[tuple[tuple[Grams, ...], Grams]] = []
        self._masks: list[list[int]] | None = None
        self._flat: tuple[array[int], array[int]] | None = None

    def flat(self) -> tuple[array[int], array[int]]:
        """Every reference's token numbers one after the other, and where each starts (one more: the end), as the
        compiled counts read them."""
        if self._flat is None:
            self._flat = (array("i", chain.from_iterable(self._numbers)), array("i", [0, *accumulate(self.lengths)]))
        return self._flat

    def order(self, n: int) -> tuple[tuple[Grams, ...], Grams]:
        """Order n + 1's n-grams of each reference, and their largest counts over the references."""
        orders = self._orders
        while len(orders) <= n:
            if orders:
                width, numbers = self.width, self._numbers
                self._packed = [list(map(or_, map(lshift, packed, repeat(width)), text[len(orders):]))
                                for packed, text in zip(self._packed, numbers, strict=True)]
            grams = tuple(map(_counted, self._packed))
            orders.append((grams, grams[0] if len(grams) == 1 else _most(grams)))
        return orders[n]

    @property
    def profiles(self) -> tuple[Profile, ...]:
        """Each reference's profile."""
        orders = [self.order(n)[0] for n in range(MAX_ORDER)]
        return tuple(Profile(text, tuple(grams[index] for grams in orders)) for index, text in enumerate(self.words))

    @property
    def most(self) -> tuple[Grams, ...]:
        """Per order, each n-gram's largest count over the references."""
        return tuple(self.order(n)[1] for n in range(MAX_ORDER))

    def masks(self) -> list[list[int]]:
        """Each reference's match masks by token number (bit i set where its token i has that number; 0 for the
        numbers it lacks, and for 0, the number of tokens no reference holds)."""
        if self._masks is None:
            self._masks = []
            for numbers in self._numbers:
                masks = [0] * (len(self.vocabulary) + 1)
                for index, number in enumerate(numbers):
                    masks[number] |= 1 << index
                self._masks.append(masks)
        return self._masks

    def profile(self, words: Sequence[str]) -> Profile:
        """The profile of an answer's tokens, packed as the references' n-grams."""
        return _profile(tuple(words), self.vocabulary, self.width)


def _most(grams: Sequence[Grams]) -> Grams:
    """Per n-gram, the largest count over the texts (BLEU clips against it)."""
    if len(grams) == 1:
        return grams[0]
    repeats: dict[int, int] = {}
    for text_grams in grams:
        for gram, extra in (text_grams.repeats or {}).items():
            repeats[gram] = max(repeats.get(gram, 0), extra)
    return Grams(frozenset().union(*(text_grams.distinct for text_grams in grams)), repeats or None)


def references_from(tokens: Sequence[Sequence[str]]) -> References:
    """The references from their tokens (their n-grams worked out as they are asked for)."""
    if not tokens:
        raise EvalError("no reference answer to score against", fix="give at least one reference")
    return References(tuple(tuple(text) for text in tokens))


@functools.lru_cache(maxsize=1 << 6)
def reference_set(texts: tuple[str, ...]) -> References:
    """The merged references of a question, cached for the answers scored next against them (their tokens are not
    cached here: a reference is seen once in a campaign)."""
    return references_from([tokens_once(text) for text in texts])


def clear_caches() -> None:
    """Forget cached reference sets (the tokenizer has its own caches)."""
    reference_set.cache_clear()


def _overlap(first: Grams, second: Grams) -> int:
    """Clipped overlap: sum over shared n-grams of the smaller count. Every shared n-gram counts
    once (a set intersection, in C); repeated ones add the smaller of their extra counts."""
    common = first.distinct & second.distinct
    total = len(common)
    if first.repeats is None or second.repeats is None:
        return total  # one side has every n-gram once: min(1 + a, 1) = 1
    for gram, extra in first.repeats.items():
        other = second.repeats.get(gram)
        if other is not None:
            total += min(extra, other)
    return total


def bleu_statistics(hyp: Profile, refs: References) -> tuple[list[int], list[int], int, int]:
    """(clipped matches per order, hypothesis n-grams per order, hypothesis length, reference length)."""
    length = len(hyp.tokens)
    ref_length = min((abs(len(r.tokens) - length), len(r.tokens)) for r in refs.profiles)[1]
    correct, total = [], []
    for n in range(MAX_ORDER):
        correct.append(_overlap(hyp.ngrams[n], refs.most[n]))
        total.append(max(0, length - n))
    return correct, total, length, ref_length


def log_precisions(
    correct: Sequence[int], total: Sequence[int], smooth: str = "none", smooth_value: float | None = None
) -> list[float | None]:
    """log of each order's n-gram precision (in percent, as sacreBLEU), None where it is 0.

    Order n's value only depends on orders 1..n, so BLEU-1, -2 and -4 share one list.
    """
    if smooth not in SMOOTHING:
        raise EvalError("unknown BLEU smoothing", found=smooth, expected=", ".join(SMOOTHING))
    value = float(SMOOTHING[smooth] or 0.0) if smooth_value is None else float(smooth_value)
    logs: list[float | None] = []
    mteval = 1.0
    for n, (matches, guesses) in enumerate(zip(map(float, correct), map(float, total), strict=False)):
        if smooth == "add-k" and n > 0:
            matches, guesses = matches + value, guesses + value
        if guesses == 0:
            precision = 0.0  # an order with no n-gram at all has precision 0 whatever the smoothing
        elif matches:
            precision = 100.0 * matches / guesses
        elif smooth == "exp":
            mteval *= 2
            precision = 100.0 / (mteval * guesses)
        elif smooth == "floor":
            precision = 100.0 * value / guesses
        else:
            precision = 0.0
        logs.append(math.log(precision) if precision > 0 else None)
    return logs


def bleu_from_logs(
    logs: Sequence[float | None], correct: Sequence[int], length: int, ref_length: int
) -> dict[str, float]:
    """BLEU-1, -2 and -4 in [0, 1]: brevity penalty times the geometric mean of the first precisions."""
    brevity = 1.0 if length >= ref_length else (math.exp(1 - ref_length / length) if length else 0.0)
    scores = {}
    for name, order in BLEU_ORDERS.items():
        head = logs[:order]
        # No match at any order, or a zero precision, gives 0 (log 0); sacreBLEU checks matches first.
        if not any(correct[:order]) or None in head:
            scores[name] = 0.0
        else:
            # exp(log(100)) / 100 can land a hair above 1 (sacreBLEU prints 100.00000000000004): clamp.
            scores[name] = min(1.0, brevity * math.exp(sum(head) / order) / 100.0)  # type: ignore[arg-type]
    return scores


def _f1(overlap: float, hyp_count: int, ref_count: int) -> float:
    precision = overlap / max(hyp_count, 1)
    recall = overlap / max(ref_count, 1)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _rouge_f1(overlap: int, hyp: Profile, ref: Profile, n: int) -> float:
    return _f1(overlap, max(0, len(hyp.tokens) - n + 1), max(0, len(ref.tokens) - n + 1))


def rouge_n(hyp: Profile, ref: Profile, n: int) -> float:
    """ROUGE-n F1: clipped n-gram overlap over hypothesis (precision) and reference (recall)."""
    return _rouge_f1(_overlap(hyp.ngrams[n - 1], ref.ngrams[n - 1]), hyp, ref, n)


class _Masks:
    """The match masks of a long text's tokens (bit i set where token i is the word), built when asked for,
    KEPT_MASKS of them kept: memory linear in the text's length."""

    def __init__(self, words: tuple[str, ...]) -> None:
        self.places: dict[str, list[int]] = {}
        for index, word in enumerate(words):
            self.places.setdefault(word, []).append(index)
        self.width = len(words)
        self.kept: dict[str, int] = {}

    def get(self, word: str) -> int:
        """The word's mask, 0 when the text does not hold it."""
        mask = self.kept.get(word)
        if mask is not None:
            return mask
        places = self.places.get(word)
        if places is None:
            return 0
        mask = _mask(places, self.width)
        if len(self.kept) < KEPT_MASKS:
            self.kept[word] = mask
        return mask


def _mask(places: list[int], width: int) -> int:
    """An integer with the bits at `places` set (a few shifts, or one pass over a byte array)."""
    if len(places) <= 4:
        return sum(1 << place for place in places)
    bits = bytearray((width + 7) // 8)
    for place in places:
        bits[place >> 3] |= 1 << (place & 7)
    return int.from_bytes(bits, "little")


def _match_masks(words: tuple[str, ...]) -> Callable[[str], int | None]:
    """Each token's match mask: all of them for a short text (at most SHORT_TEXT**2 bits), else `_Masks`."""
    if len(words) > SHORT_TEXT:
        return _Masks(words).get
    positions: dict[str, int] = {}
    for index, word in enumerate(words):
        positions[word] = positions.get(word, 0) | (1 << index)
    return positions.get


def lcs_length(first: Profile, second: Profile) -> int:
    """Length of the longest common subsequence of the two token sequences (bit-parallel)."""
    if len(first.tokens) < len(second.tokens):
        first, second = second, first
    mask_of, width = _match_masks(second.tokens), len(second.tokens)
    full = (1 << width) - 1
    state = full
    for match in filter(None, map(mask_of, first.tokens)):  # a word the other text lacks changes nothing
        low = state & match
        state = ((state + low) | (state - low)) & full
    return width - state.bit_count()


def rouge_l(hyp: Profile, ref: Profile) -> float:
    """ROUGE-L F1 over the longest common subsequence of the whole sequences."""
    if not hyp.tokens or not ref.tokens:
        return 0.0
    common = lcs_length(hyp, ref)
    return _f1(common, len(hyp.tokens), len(ref.tokens))


def generation_profiles_scores(
    hyp: Profile, refs: References, smooth: str = "none", smooth_value: float | None = None
) -> dict[str, float]:
    """The six measures from profiles (several references: BLEU clips against all, ROUGE takes the best)."""
    correct, total, length, ref_length = bleu_statistics(hyp, refs)
    logs = log_precisions(correct, total, smooth, smooth_value)
    scores = bleu_from_logs(logs, correct, length, ref_length)
    if len(refs.profiles) == 1:  # BLEU's clipped matches are then exactly ROUGE's overlaps
        ref = refs.profiles[0]
        scores["rouge1"], scores["rouge2"] = _rouge_f1(correct[0], hyp, ref, 1), _rouge_f1(correct[1], hyp, ref, 2)
    else:
        scores["rouge1"] = max(rouge_n(hyp, ref, 1) for ref in refs.profiles)
        scores["rouge2"] = max(rouge_n(hyp, ref, 2) for ref in refs.profiles)
    scores["rougel"] = max(rouge_l(hyp, ref) for ref in refs.profiles)
    return scores


def _checked_references(hypothesis: object, references: object) -> tuple[str, ...]:
    """The references as a tuple; EvalError for what would be scored wrongly (a bare string is
    a sequence of characters) or crash."""
    if not isinstance(hypothesis, str):
        raise EvalError("the hypothesis must be a string", found=type(hypothesis).__name__)
    if isinstance(references, (str, bytes)) or not isinstance(references, Iterable):
        raise EvalError("references must be a list of strings", found=type(references).__name__,
                        fix='wrap a single reference in a list: ["..."]')
    texts = tuple(references)
    kinds = sorted({type(item).__name__ for item in texts if not isinstance(item, str)})
    if kinds:
        raise EvalError("references must be a list of strings", found=", ".join(kinds))
    return texts


def generation_scores(
    hypothesis: str, references: Sequence[str], smooth: str = "none", smooth_value: float | None = None
) -> dict[str, float]:
    """bleu1 bleu2 bleu4 rouge1 rouge2 rougel of one answer against its reference answers."""
    texts = _checked_references(hypothesis, references)
    return answer_scores(tokens_once(hypothesis), reference_set(texts), smooth, smooth_value)


def _clipped(grams: list[int], ref: Grams) -> int:
    """`_overlap` of an answer's n-grams of one order (packed, in order, repeats included) with a reference's: only the
    answer's n-grams that the reference holds are kept (a filter in C), and only they are counted."""
    hits = list(filter(ref.distinct.__contains__, grams))
    shared = set(hits)
    total = len(shared)  # min(count in the answer, 1) for each shared n-gram
    if ref.repeats is None or total == len(hits):
        return total
    # The few n-grams the reference repeats that the answer holds add what more of them it may count.
    for gram in ref.repeats.keys() & shared:
        total += min(hits.count(gram), 1 + ref.repeats[gram]) - 1
    return total


def answer_scores(
    words: Sequence[str], refs: References, smooth: str = "none", smooth_value: float | None = None
) -> dict[str, float]:
    """`generation_profiles_scores` of an answer's tokens, without its profile: its tokens numbered as the
    references', its counts worked out by the compiled loop (`overlaps.c`) where there is one and the texts are
    short, else by `_set_counts`. The counts are the profile's, so the values are too."""
    numbers = list(map(refs.vocabulary.get, words, repeat(0)))
    length = len(numbers)
    lengths = refs.lengths
    counted = _compiled_counts(numbers, refs)
    if counted is None:
        correct, rouge1, rouge2, rougel = _set_counts(numbers, words, refs)
    else:
        correct, rouge1, rouge2, common = counted
        rougel = max(map(_f1, common, repeat(length), lengths))
    total = [max(0, length - n) for n in range(MAX_ORDER)]
    ref_length = min((abs(size - length), size) for size in lengths)[1]
    scores = bleu_from_logs(log_precisions(correct, total, smooth, smooth_value), correct, length, ref_length)
    scores["rouge1"] = max(_f1(overlap, length, max(0, size)) for overlap, size in zip(rouge1, lengths, strict=True))
    scores["rouge2"] = max(_f1(overlap, max(0, length - 1), max(0, size - 1))
                           for overlap, size in zip(rouge2, lengths, strict=True))
    scores["rougel"] = rougel
    return scores


def _compiled_counts(numbers: list[int], refs: References) -> tuple[list[int], ...] | None:
    """(BLEU's clipped matches per order, ROUGE-1's and ROUGE-2's overlap with each reference, the LCS's length with
    each) by the compiled loop; None where there is none, or a text is longer than COMPARED_TEXT."""
    library = overlaps_library()
    if library is None or not _INT32 or len(numbers) > COMPARED_TEXT or max(refs.lengths) > COMPARED_TEXT:
        return None
    tokens, starts = refs.flat()
    answer = array("i", numbers)
    out = array("i", bytes(answer.itemsize * (MAX_ORDER + 3 * len(refs.lengths))))
    if library.evalcore_overlaps(answer.buffer_info()[0], len(numbers), tokens.buffer_info()[0],
                                 starts.buffer_info()[0], len(refs.lengths), out.buffer_info()[0]):
        return None  # out of memory: the sets need less
    found = out.tolist()
    return found[:MAX_ORDER], found[MAX_ORDER::3], found[MAX_ORDER + 1::3], found[MAX_ORDER + 2::3]


def _overlaps_signatures() -> compiled.Signatures:
    pointer, integer = ctypes.c_void_p, ctypes.c_int32
    return {"evalcore_overlaps": (integer, [pointer, integer, pointer, pointer, integer, pointer])}


# The compiled counts, their argument types declared (once per process); None where the sets count.
overlaps_library = compiled.loader(Path(__file__).with_name("overlaps.c"), _overlaps_signatures)


def _set_counts(numbers: list[int], words: Sequence[str], refs: References) -> tuple[list[int], list[int], list[int],
                                                                                   float]:
    """(BLEU's clipped matches per order, ROUGE-1's and ROUGE-2's overlap with each reference, ROUGE-L) of an answer's
    token numbers: an answer is scored once, so its n-grams are only matched against the references' (`_clipped`),
    never collected into sets of their own, and an order it shares nothing of ends the matching (no higher order can
    share anything); its LCS reads the references' match masks by number."""
    length = len(numbers)
    several = len(refs.lengths) > 1
    grams, most = refs.order(0)
    correct = [_clipped(numbers, most)]
    rouge1 = [_clipped(numbers, ref) for ref in grams] if several else correct[:]  # one: BLEU's clipped matches
    rouge2 = None
    packed = numbers
    for n in range(1, MAX_ORDER):
        if not correct[-1]:
            correct += [0] * (MAX_ORDER - n)
            break
        grams, most = refs.order(n)
        packed = list(map(or_, map(lshift, packed, repeat(refs.width)), numbers[n:]))
        correct.append(_clipped(packed, most))
        if n == 1:
            rouge2 = [_clipped(packed, ref) for ref in grams] if several else [correct[1]]
    lengths = refs.lengths
    if length and max(lengths) <= SHORT_TEXT:
        rougel = max(map(_rouge_l_numbers, repeat(numbers), refs.masks(), lengths))
    else:  # no word, or a reference too long for all its masks at once
        hyp = Profile(tuple(words), ())
        rougel = max(rouge_l(hyp, Profile(ref, ())) for ref in refs.words)
    return correct, rouge1, rouge2 or [0] * len(lengths), rougel


def _rouge_l_numbers(numbers: list[int], masks: list[int], size: int) -> float:
    """`rouge_l` of an answer's token numbers against a reference's match masks by number (`References.masks`)."""
    if not size:
        return 0.0
    full = (1 << size) - 1
    state = full
    for match in filter(None, map(masks.__getitem__, numbers)):  # a word the reference lacks changes nothing
        low = state & match
        state = ((state + low) | (state - low)) & full
    return _f1(size - state.bit_count(), len(numbers), size)


def _of_question(inputs: Inputs) -> dict[str, float]:
    """The six measures of the question's answer against its references, from one set of n-grams."""
    return generation_scores(inputs.answer or "", list(inputs.references))


def _declare(name: str, doc: str, checked: str, verdict_priority: int | None = None) -> Measure:
    """A measure of the answer's words against the reference answers, on the `default` tokens."""
    extra = (("smooth", "none"),) if name.startswith("bleu") else (("refs", "max"),)
    return Measure(name, doc, "generation", needs=("answer", "references"), settings=(("tok", TOKENIZER), *extra),
                   verdict_priority=verdict_priority, together=_of_question,
                   api_field=name, checked=checked)


_SACREBLEU = "sacreBLEU BLEU(tokenize='none', smooth_method='none', max_ngram_order=N, effective_order=False) / 100"
_ROUGE_SCORE = "rouge-score rouge1, rouge2, rougeL F1, no stemming, the same tokens"


DECLARED = (
    _declare("bleu1", "BLEU with N = 1: BP * p1, clipped against all references, BP = exp(1 - r/c) if c < r "
             "with r the closest reference length (Papineni et al. 2002; sacreBLEU).", _SACREBLEU),
    _declare("bleu2", "BLEU with N = 2: BP * (p1 p2)^(1/2); 0 without smoothing if an order has no match.",
             _SACREBLEU),
    _declare("bleu4", "BLEU with N = 4: BP * (p1 p2 p3 p4)^(1/4); 0 without smoothing if an order has no match.",
             _SACREBLEU),
    _declare("rouge1", "ROUGE-1 F1 = 2PR/(P+R) over clipped unigram overlap, best reference (Lin 2004; rouge-score).",
             _ROUGE_SCORE),
    _declare("rouge2", "ROUGE-2 F1 over clipped bigram overlap, best reference (Lin 2004; rouge-score).",
             _ROUGE_SCORE),
    # A generation-side change is judged by it when no judge scored both campaigns; last in the verdict order.
    _declare("rougel", "ROUGE-L F1 with P = LCS/|hyp|, R = LCS/|ref| over whole sequences, best reference "
             "(Lin 2004; rouge-score rougeL).", _ROUGE_SCORE, verdict_priority=4),
)
