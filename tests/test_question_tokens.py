"""A dataset's question and reference tokens, worked out once per dataset content and kept in the index folder, are
exactly what the tokenizer gives; `tokens_once` reads them, and texts the table does not hold are tokenized."""

from __future__ import annotations

import importlib.metadata
import random
from pathlib import Path

import pytest

from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.datasets.loader import load_dataset
from evalcore.language import text as text_module
from evalcore.language.text import (
    LONG_TEXT,
    clear_caches,
    language_once,
    tokens,
    tokens_once,
    use_known_tokens,
    use_no_known_tokens,
)
from evalcore.targets.knowledge import index_dir
from evalcore.targets.question_tokens import (
    FILE,
    build_table,
    clear_memo,
    dataset_texts,
    dataset_tokens,
    load_table,
    save_table,
)
from evalcore.testing.multilingual_corpus import corpus
from tests.test_campaigns import FakeTarget

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "dataset" / "samples"


@pytest.fixture(autouse=True)
def _no_tables() -> None:
    use_no_known_tokens()
    clear_memo()


def fresh(text: str) -> tuple[str, ...]:
    """The tokenizer's output with nothing cached or given."""
    clear_caches()
    return tokens_once(text)


def random_texts(count: int, seed: int) -> list[str]:
    """Texts mixing English, French and Chinese passages' pieces, punctuation and spaces, a few past the long-text
    limit."""
    cut = [passage.text.replace("。", "。|").replace(". ", ". |") for passage in corpus()]
    pieces = [piece for text in cut for piece in text.split("|")]
    glue = [" ", "", "\n", "。", ", ", " 3,5 ", "Été ", "（注）", "…"]
    rng = random.Random(seed)
    texts = ["".join(rng.choice(pieces) + rng.choice(glue) for _ in range(rng.randint(0, 8))) for _ in range(count)]
    long = " ".join(pieces)
    while len(long) <= LONG_TEXT:
        long += " " + long
    return [*texts, long, long[: LONG_TEXT + 1], "", "   ", "a", "中"]


def test_the_sample_datasets_questions_and_references_read_back_as_the_tokenizer_gives_them(tmp_path: Path) -> None:
    dataset = load_dataset(SAMPLE)
    texts = dataset_texts(dataset.questions)
    assert set(texts) == {q.text for q in dataset.questions} | {r for q in dataset.questions for r in q.references}
    table = dataset_tokens(dataset.content_hash, dataset.questions, tmp_path)
    assert len(list(tmp_path.glob(f"tokens-*-{dataset.content_hash[:24]}-*/{FILE}"))) == 1
    clear_memo()
    loaded = dataset_tokens(dataset.content_hash, dataset.questions, tmp_path)  # read back from the file
    assert loaded is not table
    wanted = {text: fresh(text) for text in texts}
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in text) for text in texts)  # jieba's part is covered
    for text in texts:
        assert table.get(text) == loaded.get(text) == wanted[text]
        assert table.language(text) == loaded.language(text) == language_once(text)
    assert loaded.get("a text the dataset does not hold") is None
    assert loaded.language("a text the dataset does not hold") is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_three_language_texts_read_back_as_the_tokenizer_gives_them(tmp_path: Path, seed: int) -> None:
    texts = list(dict.fromkeys(random_texts(300, seed)))
    save_table(build_table(texts), tmp_path / FILE)
    table = load_table(tmp_path / FILE, texts)
    assert table is not None
    for text in texts:
        assert table.get(text) == fresh(text) == tuple(tokens(text))
        assert table.language(text) == language_once(text)
    assert {table.language(text) for text in texts} == {"en", "fr", "zh"}


def test_a_file_for_other_texts_or_damaged_is_not_read(tmp_path: Path) -> None:
    texts = random_texts(20, 4)
    path = tmp_path / FILE
    save_table(build_table(texts), path)
    assert load_table(path, texts[:-1]) is None
    assert load_table(tmp_path / "missing.npz", texts) is None
    path.write_bytes(path.read_bytes()[:100])
    assert load_table(path, texts) is None


def test_tokens_once_reads_the_table_and_tokenizes_what_it_does_not_hold() -> None:
    class Marked:
        def get(self, text: str) -> tuple[str, ...] | None:
            return ("from", "the", "table") if text == "held" else None

    use_known_tokens(Marked())
    assert tokens_once("held") == ("from", "the", "table")
    assert tokens_once("Not held, Été 退款政策") == tuple(tokens("Not held, Été 退款政策"))
    use_no_known_tokens()
    assert tokens_once("held") == ("held",)


def test_a_text_read_from_a_table_is_read_once_until_the_tables_change() -> None:
    class Counting:
        def __init__(self, words: tuple[str, ...]) -> None:
            self.words, self.reads = words, 0

        def get(self, text: str) -> tuple[str, ...] | None:
            self.reads += 1
            return self.words if text == "held" else None

    first, second = Counting(("first",)), Counting(("second",))
    use_known_tokens(first)
    assert [tokens_once("held") for _ in range(3)] == [("first",)] * 3
    assert first.reads == 1  # retrieval, the generator and the measures read the question's tokens in turn
    use_known_tokens(second)
    assert tokens_once("held") == ("second",)
    use_no_known_tokens()
    assert tokens_once("held") == ("held",)


def test_a_campaign_builds_the_table_once_and_hands_it_to_the_tokenizer(tiny_dataset: Path, tmp_path: Path) -> None:
    dataset = load_dataset(tiny_dataset)
    manager = get_manager(str(tmp_path / "store.db"))
    written: list[int] = []
    try:
        for _ in range(2):
            clear_memo()  # as a new process: the second campaign reads the file
            campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget(), concurrency=1))
            assert manager.wait(campaign_id, timeout=30).status == "succeeded"
            saved = list(index_dir().glob(f"tokens-*-{dataset.content_hash[:24]}-*/{FILE}"))
            assert len(saved) == 1
            assert saved[0].parent.name.endswith(f"-tok_default-jieba{importlib.metadata.version('jieba')}")
            written.append(saved[0].stat().st_mtime_ns)
    finally:
        manager.close()
    assert written[0] == written[1]  # built by the first campaign only
    tables = text_module._known
    assert tables  # the last given first
    for question in dataset.questions:
        for text in (question.text, *question.references):
            assert tables[0].get(text) == tuple(tokens(text))


def test_a_campaign_on_under_half_the_questions_builds_no_table_but_reads_one_kept(
        tiny_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first try on a few questions of a large dataset would pay for tokenizing all of them: it tokenizes its own
    as they come; once a fuller campaign kept the table, a small one reads it."""
    monkeypatch.setenv("EVALCORE_INDEX_DIR", str(tmp_path / "indexes"))
    dataset = load_dataset(tiny_dataset)
    manager = get_manager(str(tmp_path / "store.db"))

    def run(limit: int | None) -> list[Path]:
        clear_memo()
        use_no_known_tokens()
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget(), concurrency=1,
                                                   limit=limit))
        assert manager.wait(campaign_id, timeout=30).status == "succeeded"
        return list((tmp_path / "indexes").glob(f"tokens-*-{dataset.content_hash[:24]}-*/{FILE}"))

    try:
        assert run(limit=1) == []  # 1 of 3 questions
        assert text_module._known == ()
        assert len(run(limit=None)) == 1
        assert len(run(limit=1)) == 1
    finally:
        manager.close()
    assert text_module._known[0].get(dataset.questions[0].text) == tuple(tokens(dataset.questions[0].text))


def test_the_tokenizer_key_names_the_jieba_that_cuts_chinese(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An index or token table saved with one jieba is not read back with another (it may cut words differently)."""
    assert text_module.tokenizer_key() == f"default-jieba{importlib.metadata.version('jieba')}"
    fake = tmp_path / "jieba"
    fake.mkdir()
    (fake / "__init__.py").write_text("from x import y\n__version__ = '9.9.9'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "jieba", raising=False)
    assert text_module.tokenizer_key.__wrapped__() == "default-jieba9.9.9"  # type: ignore[attr-defined]


def test_a_campaign_on_enough_of_a_large_dataset_keeps_a_table_of_its_own_questions(
        tiny_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer than half the questions, from OWN_TABLE_FROM on: a table of the campaign's own texts, named by them, built
    by the first campaign on them and read by the next."""
    from evalcore.campaigns import answering

    monkeypatch.setenv("EVALCORE_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.setattr(answering, "OWN_TABLE_FROM", 1)
    dataset = load_dataset(tiny_dataset)
    manager = get_manager(str(tmp_path / "store.db"))
    asked = dataset.questions[:1]
    key = answering.own_texts_key(dataset.content_hash, asked)

    def run() -> list[Path]:
        clear_memo()
        use_no_known_tokens()
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget(), concurrency=1,
                                                   limit=1))
        assert manager.wait(campaign_id, timeout=30).status == "succeeded"
        return list((tmp_path / "indexes").glob(f"tokens-*/{FILE}"))

    try:
        first = run()
        assert [path.parent.name.split("-")[2] for path in first] == [key[:24]]  # not the whole dataset's
        built = first[0].stat().st_mtime_ns
        assert run() == first
        assert first[0].stat().st_mtime_ns == built  # read back, not built again
    finally:
        manager.close()
    table = text_module._known[0]
    for text in (asked[0].text, *asked[0].references):
        assert table.get(text) == tuple(tokens(text))
    assert table.get(dataset.questions[1].text) is None  # a question not asked is not in it


def test_the_own_questions_table_is_named_by_their_texts(tiny_dataset: Path) -> None:
    from evalcore.campaigns.answering import own_texts_key

    dataset = load_dataset(tiny_dataset)
    first, second = dataset.questions[:1], dataset.questions[1:2]
    assert own_texts_key(dataset.content_hash, first) == own_texts_key(dataset.content_hash, first)
    assert own_texts_key(dataset.content_hash, first) != own_texts_key(dataset.content_hash, second)
    assert own_texts_key(dataset.content_hash, first) != own_texts_key("another content", first)


def test_a_texts_tokens_numbered_in_a_vocabulary_are_its_tokens_looked_up_there() -> None:
    # Each vocabulary (an index's terms, a sentence table's words) holds some of the table's words: a text's numbers
    # are its tokens' numbers in order, repeats kept, the words the vocabulary lacks left out; the tables given to
    # the tokenizer answer `known_numbers`, a text they do not hold has none.
    from evalcore.language.text import known_numbers

    texts = random_texts(60, 4)
    table = build_table(texts)
    words = sorted({token for text in texts for token in tokens(text)})
    rng = random.Random(2)
    vocabularies = [{word: number for number, word in enumerate(rng.sample(words, len(words) // share))}
                    for share in (1, 2, 5)] + [{}]
    for _ in range(2):  # numbered once per vocabulary, read back from then on
        for vocabulary in vocabularies:
            for text in texts:
                expected = [vocabulary[token] for token in tokens(text) if token in vocabulary]
                assert table.numbers(text, vocabulary) == expected, text
    assert table.numbers("no such text", vocabularies[0]) is None
    use_known_tokens(table)
    assert known_numbers(texts[0], vocabularies[1]) == [vocabularies[1][token] for token in tokens(texts[0])
                                                        if token in vocabularies[1]]
    assert known_numbers("no such text", vocabularies[1]) is None


def test_answers_are_the_same_whether_the_questions_words_are_numbered_from_the_table_or_tokenized(
        tmp_path: Path) -> None:
    # BM25's term ids and the extractive generator's question words and language, read from the dataset's table
    # (numbered once per vocabulary) or from the question's tokens and text: the same answers, hits and scores.
    from evalcore.targets import RagTarget, TargetConfig
    from evalcore.testing.multilingual_corpus import QUESTIONS

    questions = [question for question, _ in QUESTIONS] + random_texts(40, 9)
    target = RagTarget(TargetConfig.from_dict({"retriever": "bm25", "keyword_threshold": 0.0}), cache_dir=tmp_path)
    target.prepare(corpus())
    tokenized = [target.answer(question) for question in questions]
    use_known_tokens(build_table(questions))
    numbered = [target.answer(question) for question in questions]
    assert [(a.answer, a.retrieved) for a in numbered] == [(a.answer, a.retrieved) for a in tokenized]
    assert sum(len(a.retrieved) for a in tokenized) > len(questions)  # chunks were retrieved, not only fallbacks
