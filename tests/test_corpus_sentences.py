"""The knowledge base's sentence table: every chunk's sentences, languages and words, worked out once per corpus and
kept beside the index, give the extractive generator the same answers as reading the context's text each time."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from evalcore.datasets.loader import Passage, load_dataset
from evalcore.language.text import split_sentences, tokens
from evalcore.targets import TargetConfig, build_target, sentences
from evalcore.targets.base import Retrieved, TargetAnswer
from evalcore.targets.generators import ExtractiveGenerator, _chosen, language
from evalcore.targets.knowledge import build_knowledge_base, clear_memo
from evalcore.targets.sentences import COMPILED_WORDS, FILE, SentenceTable, build_table, load_table
from evalcore.testing.multilingual_corpus import corpus
from tests.conftest import require_c

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "dataset" / "samples"

# Texts where splitting, folding or segmenting has edge cases: list numbers, Han runs across line breaks and
# sentence ends, combining marks, decimals, a sentence repeated, no word at all, nothing.
ODD = ["1. Ouvrez le capot. 2. Retirez la batterie.\n3. Attendez 3,5 minutes.",
       "退款政策\n客户可以在收到商品后三十天内退货。退款将在五个工作日内退回原卡！",
       "Cafe\u0301 cre\u0300me. Café crème.  Naïve résumé… Déjà vu?",
       "Pi is 3.14. Pi is 3.14. «Quoted.» (Bracketed!)",
       "混合 text 中文and English。下一句？最后",
       "... !!! ???", "", "   \n  "]


def expected(text: str) -> list[tuple[str, str, frozenset[str]]]:
    """A chunk's sentences as the generator reads them without the table."""
    return [(s, language(s), frozenset(tokens(s))) for s in split_sentences(text)]


def read_back(table: SentenceTable, text: str) -> list[tuple[str, str, frozenset[str]]]:
    words = {number: word for word, number in table.vocabulary.items()}
    found = table.of(text)
    assert found is not None
    return [(s.text, s.language, frozenset(words[number] for number in s.words)) for s in found]


def texts_of(chunk_size: int | None) -> list[str]:
    passages = [*corpus(), *load_dataset(SAMPLE).passages]
    kb = build_knowledge_base(passages, chunk_size=chunk_size, chunk_overlap=2 if chunk_size else 0)
    return [chunk.text for chunk in kb.chunks]


@pytest.mark.parametrize("chunk_size", [None, 12])
def test_the_table_holds_what_the_generator_would_read(chunk_size: int | None) -> None:
    texts = [*texts_of(chunk_size), *ODD]
    table = build_table(texts)
    assert {language(s) for text in texts for s in split_sentences(text)} == {"en", "fr", "zh"}
    for text in texts:
        assert read_back(table, text) == expected(text)
    assert table.of("a text no chunk has") is None


def test_saved_and_read_back(tmp_path: Path) -> None:
    texts = [*texts_of(None), *ODD]
    path = tmp_path / FILE
    from evalcore.targets.sentences import save_table

    save_table(build_table(texts), path)
    loaded = load_table(path, texts)
    assert loaded is not None
    assert all(read_back(loaded, text) == expected(text) for text in texts)
    assert load_table(path, texts[:-1]) is None  # another corpus: not read
    path.write_bytes(b"not a table")
    assert load_table(path, texts) is None
    assert load_table(tmp_path / "missing.npz", texts) is None


def questions() -> list[str]:
    """The sample dataset's questions (English, French, Chinese) and a few more in each language."""
    return [*(question.text for question in load_dataset(SAMPLE).questions),
            "What is the default password of the router?", "Quelle est l'autonomie de la trottinette électrique ?",
            "员工的密码至少需要几个字符？", "退款需要多长时间？", "Combien de temps dure le remboursement ?", "?"]


@pytest.mark.parametrize("settings", [{"retriever": "bm25"}, {"retriever": "bm25", "extractive_sentences": 1,
                                                                 "chunking": "tokens", "chunk_size": 12,
                                                                 "chunk_overlap": 2, "keyword_threshold": 0.0}])
def test_answers_are_the_same_with_the_table(tmp_path: Path, settings: dict[str, object]) -> None:
    target = build_target(TargetConfig.from_dict(settings), cache_dir=tmp_path)
    target.prepare([*corpus(), *load_dataset(SAMPLE).passages])
    generator = target._generator
    assert isinstance(generator, ExtractiveGenerator)
    assert generator.corpus is not None
    plain = ExtractiveGenerator(generator.sentences)
    answered = 0
    for question in questions():
        result = target.answer(question)
        if result.context:
            answered += 1
            assert result.answer == plain.generate(question, result.context, TargetAnswer("", []))
    assert answered > 90


def test_a_context_the_table_does_not_hold_is_read_from_its_text(tmp_path: Path) -> None:
    kb = build_knowledge_base(corpus(), chunk_size=None, cache_dir=tmp_path)
    assert kb.sentences is not None
    generator, plain = ExtractiveGenerator(2, kb.sentences), ExtractiveGenerator(2)
    known = [Retrieved(chunk.pid, chunk.title, chunk.text, 1.0, {}) for chunk in kb.chunks[:3]]
    other = Retrieved(None, "", "Router passwords are printed under the device. 路由器的密码印在设备底部。", 0.5, {})
    for context in ([*known, other], [other], known):
        for question in ("What is the router password?", "路由器的密码在哪里？"):
            assert (generator.generate(question, context, TargetAnswer("", []))
                    == plain.generate(question, context, TargetAnswer("", [])))


def test_an_index_without_its_table_gets_one_when_read(tmp_path: Path) -> None:
    passages = corpus()
    built = build_knowledge_base(passages, chunk_size=None, cache_dir=tmp_path)
    saved = built.folder / FILE
    assert saved.exists()
    saved.unlink()  # an index written before the table was kept beside it
    clear_memo()
    loaded = build_knowledge_base(passages, chunk_size=None, cache_dir=tmp_path)
    assert loaded.loaded_from_cache
    assert saved.exists()
    assert loaded.sentences is not None
    assert all(read_back(loaded.sentences, chunk.text) == expected(chunk.text) for chunk in loaded.chunks)
    clear_memo()
    again = build_knowledge_base(passages, chunk_size=None, cache_dir=tmp_path)
    assert again.sentences is not None
    assert again.sentences.vocabulary == loaded.sentences.vocabulary


def test_an_answer_of_whole_sentences_has_their_tokens() -> None:
    """Sentences joined as an extractive answer joins them: where the table says the joined text's tokens are the
    sentences' own, they equal the tokenizer's on the joined text."""
    import random

    from evalcore.language.text import tokens_fresh

    texts = [*texts_of(None), *ODD, "Ends on a word\n第二句没有句号", "价格是3.\n5元。", "A\u0301. \u0301B。",
             "！\u0338"]
    table = build_table(texts)
    sentences = [s for text in texts for s in table.of(text) or ()]
    rng = random.Random(7)
    pairs = [*itertools.pairwise(sentences),
             *((rng.choice(sentences), rng.choice(sentences)) for _ in range(3000))]
    given = {" ": 0, "": 0}
    for pair in pairs:
        for joiner in given:
            words = table.answer_tokens([s.text for s in pair], table.choice([(s.number, 1) for s in pair]).words,
                                        joiner)
            if words is not None:
                given[joiner] += 1
                assert words == tokens_fresh(joiner.join(s.text for s in pair)), pair
    assert given[" "] == len(pairs)
    assert given[""] > 100


def test_the_measures_read_the_answer_tokens_the_generator_gave(tmp_path: Path) -> None:
    from evalcore.language.text import _given, clear_caches, tokens_fresh, tokens_once

    target = build_target(TargetConfig.from_dict({"retriever": "bm25"}), cache_dir=tmp_path)
    target.prepare([*corpus(), *load_dataset(SAMPLE).passages])
    given = 0
    for question in questions():
        clear_caches()
        answer = target.answer(question).answer
        given += _given.get(answer) is not None
        assert tokens_once(answer) == tokens_fresh(answer)
    assert given > len(questions()) * 3 // 4


@pytest.mark.parametrize("compiled", [True, False])  # the sentences chosen by the compiled loop, or in Python
@pytest.mark.parametrize("count", [1, 2, 3, 6])
def test_random_contexts_get_the_same_answers(tmp_path: Path, count: int, compiled: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Contexts of 1-8 chunks drawn at random from a corpus in three languages, with questions made of words of
    their sentences (so that many sentences share words and tie): the table's answer is the text's."""
    import random

    if compiled:
        require_c(sentences.extract_library())
    else:
        monkeypatch.setattr(sentences, "extract_library", lambda: None)
    kb = build_knowledge_base([*corpus(), *load_dataset(SAMPLE).passages], chunk_size=None, cache_dir=tmp_path)
    assert kb.sentences is not None
    generator, plain = ExtractiveGenerator(count, kb.sentences), ExtractiveGenerator(count)
    rng = random.Random(count)
    languages = set()
    for _ in range(300):
        chunks = rng.sample(kb.chunks, rng.randint(1, 8))
        context = [Retrieved(chunk.pid, chunk.title, chunk.text, 1.0, {}) for chunk in chunks]
        words = [word for chunk in chunks for word in tokens(chunk.text)]
        joiner = rng.choice(["", " "])
        question = joiner.join(rng.sample(words, min(len(words), rng.randint(1, 12)))) + rng.choice(["?", "？"])
        languages.add(language(question))
        answer = generator.generate(question, context, TargetAnswer("", []))
        assert answer == plain.generate(question, context, TargetAnswer("", [])), question
    assert languages == {"en", "fr", "zh"}


@pytest.mark.parametrize("words", [sentences.ANSWER_WORDS, 0])  # 0: the answer's words asked again with more room
@pytest.mark.parametrize("count", [1, 2, 5])
def test_the_compiled_choice_is_the_python_one(tmp_path: Path, count: int, words: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Random contexts (a chunk twice, chunks without a sentence), question words drawn from the context's sentences
    and from anywhere (none, a few, more than the compiled loop holds), every language asked: the compiled loop
    chooses the sentences Python chooses, in the same order, with the same spans and words; over COMPILED_WORDS
    words it leaves the choice to Python."""
    import random

    require_c(sentences.extract_library())
    monkeypatch.setattr(sentences, "ANSWER_WORDS", words)
    kb = build_knowledge_base([*corpus(), *load_dataset(SAMPLE).passages, *odd_passages()], chunk_size=None,
                              cache_dir=tmp_path)
    table = kb.sentences
    assert table is not None
    rng = random.Random(count)
    compared = 0
    for _ in range(400):
        rows = [rng.randrange(len(kb.chunks)) for _ in range(rng.randint(1, 8))]
        starts = [table.word_starts[table.sentence_starts[row:row + 2]].tolist() for row in rows]
        words = [word for first, last in starts for word in table.words[first:last].tolist()]
        question = set(rng.sample(words, min(len(words), rng.randint(0, 12))))
        question |= {rng.randrange(len(table.vocabulary)) for _ in range(rng.choice([0, 3, 70]))}
        asked = rng.randrange(3)
        chosen = table.chosen(rows, question, asked, count)
        if len(question) > COMPILED_WORDS:
            assert chosen is None
            continue
        compared += 1
        assert chosen == table.choice(_chosen(table, rows, question, asked, count)), (rows, sorted(question), asked)
    assert compared > 250


def test_the_compiled_choice_tells_apart_words_whose_numbers_share_their_low_bits() -> None:
    """A table of many more words than the compiled loop's filter has bits (FILTER_BITS in extract.c), questions of
    context words and of words whose numbers differ from theirs only above those bits: the compiled loop chooses the
    sentences Python chooses."""
    import random

    require_c(sentences.extract_library())
    rng = random.Random(11)
    texts = [" ".join(" ".join(f"w{rng.randrange(30_000)}" for _ in range(rng.randint(1, 30))) + "."
                      for _ in range(rng.randint(1, 9))) for _ in range(800)]
    table = build_table(texts)
    assert len(table.vocabulary) > 4 * 4096
    for _ in range(300):
        rows = [rng.randrange(len(texts)) for _ in range(rng.randint(1, 6))]
        first, last = table.word_starts[table.sentence_starts[[rows[0], rows[0] + 1]]].tolist()
        near = rng.sample(table.words[first:last].tolist(), min(last - first, rng.randint(1, 8)))
        question = {number ^ (4096 << rng.randrange(3)) for number in near} & set(range(len(table.vocabulary)))
        question |= set(rng.sample(near, rng.randint(0, len(near))))
        for count in (1, 3):
            assert table.chosen(rows, question, 0, count) == table.choice(_chosen(table, rows, question, 0, count))


def odd_passages() -> list[Passage]:
    """The odd texts as passages (a chunk with no sentence, one with no word)."""
    return [Passage(10_000 + number, text, "") for number, text in enumerate(ODD)]
