"""Knowledge base and retrieval on real corpora: bm25, vector, hybrid, thresholds, chunking, cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalcore.datasets import DATASET_ROOT, Passage, load_dataset
from evalcore.targets import RagTarget, TargetConfig
from evalcore.targets.knowledge import build_knowledge_base, chunk_passage, clear_memo
from evalcore.testing.multilingual_corpus import QUESTIONS, corpus

RETRIEVERS = ("bm25", "vector", "hybrid")


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("index")


def prepared(index_dir: Path, passages: list[Passage] | tuple[Passage, ...], **settings: object) -> RagTarget:
    target = RagTarget(TargetConfig.from_dict(settings), cache_dir=index_dir)
    target.prepare(passages)
    return target


def ranked_pids(target: RagTarget, question: str) -> list[int | None]:
    return [item.pid for item in target.answer(question).retrieved]


@pytest.mark.parametrize("retriever", RETRIEVERS)
@pytest.mark.parametrize(("question", "pid"), QUESTIONS)
def test_known_questions_find_their_passage(index_dir: Path, retriever: str, question: str, pid: int) -> None:
    target = prepared(index_dir, corpus(), retriever=retriever)
    assert pid in ranked_pids(target, question)[:3]


def test_retrievers_rank_differently(index_dir: Path) -> None:
    rankings = {r: [ranked_pids(prepared(index_dir, corpus(), retriever=r), q) for q, _ in QUESTIONS]
                for r in RETRIEVERS}
    assert rankings["bm25"] != rankings["vector"] != rankings["hybrid"] != rankings["bm25"]


def test_stage_scores_and_threshold_scales(index_dir: Path) -> None:
    question = QUESTIONS[1][0]
    items = prepared(index_dir, corpus(), retriever="hybrid", fusion="weighted", fusion_weight=0.25).answer(
        question).retrieved
    assert max(item.stages["bm25_norm"] for item in items) == 1.0
    for item in items:
        assert item.stages["bm25_norm"] >= 0.3 or item.stages["vector"] >= 0.2
        expected = 0.25 * item.stages["vector"] + 0.75 * item.stages["bm25_norm"]
        assert item.score == pytest.approx(expected, abs=1e-5)
    assert [i.score for i in items] == sorted((i.score for i in items), reverse=True)


def test_thresholds_and_top_k_cut_the_list(index_dir: Path) -> None:
    question = QUESTIONS[0][0]
    loose = prepared(index_dir, corpus(), retriever="vector", vector_threshold=-1.0).answer(question).retrieved
    strict = prepared(index_dir, corpus(), retriever="vector", vector_threshold=0.4).answer(question).retrieved
    top3 = prepared(index_dir, corpus(), retriever="bm25", keyword_threshold=0.0, embedding_top_k=3)
    assert len(loose) == 30
    assert 0 < len(strict) < 30
    assert all(item.score >= 0.4 for item in strict)
    assert len(top3.answer(question).retrieved) == 3
    everything = prepared(index_dir, corpus(), retriever="bm25", keyword_threshold=1.0).answer(question).retrieved
    assert [item.stages["bm25_norm"] for item in everything] == [1.0]


def test_no_match_gives_fallback_answer(index_dir: Path) -> None:
    target = prepared(index_dir, corpus(), retriever="bm25")
    result = target.answer("zzzz qqqq")
    assert result.retrieved == []
    assert result.answer == target.config.prompts.fallback_answer
    assert result.llm_calls == 0


def test_chunks_keep_provenance_and_text() -> None:
    text = ("Word " * 25 + "Le café coûte 3.14 euros. " + "路由器的默认地址是 192.168.8.1，可以在浏览器中打开。" * 3)
    chunks = chunk_passage(Passage(7, text, "Manual"), 10, 3)
    assert len(chunks) > 3
    assert {(c.pid, c.title) for c in chunks} == {(7, "Manual")}
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert all(c.text for c in chunks)
    assert all(c.text in text for c in chunks)
    assert any("3.14" in c.text for c in chunks)  # decimals are never split
    assert chunks[-1].text.endswith("打开。")
    assert chunk_passage(Passage(1, "short text", ""), 10, 3)[0].text == "short text"


def test_chunked_retrieval_maps_to_passage_ids(index_dir: Path) -> None:
    target = prepared(index_dir, corpus(), retriever="bm25", chunking="tokens", chunk_size=8, chunk_overlap=2)
    assert len(target.kb.chunks) > 30
    items = target.answer("What is the default password of the router?").retrieved
    assert items[0].pid == 1
    assert items[0].title == "Router manual"


def test_index_cache_is_reused_from_disk(tmp_path: Path) -> None:
    passages = corpus()
    first = build_knowledge_base(passages, chunk_size=None, models=("use",), cache_dir=tmp_path)
    clear_memo()
    second = build_knowledge_base(passages, chunk_size=None, models=("use",), cache_dir=tmp_path)
    assert not first.loaded_from_cache
    assert second.loaded_from_cache
    assert np.array_equal(first.embeddings["use"], second.embeddings["use"])
    assert first.chunks == second.chunks
    changed = [passages[0]._replace(text="A changed passage.")] + passages[1:]
    clear_memo()
    other = build_knowledge_base(changed, chunk_size=None, cache_dir=tmp_path)
    assert not other.loaded_from_cache
    assert other.folder != first.folder
    assert len(list(tmp_path.iterdir())) == 2


def test_embedding_reranker_uses_a_second_model(index_dir: Path) -> None:
    target = prepared(index_dir, corpus(), retriever="bm25", reranker="embedding", rerank_threshold=-1.0)
    assert target.embedding_models() == ("e5",)
    items = target.answer("How often should I descale the espresso machine?").retrieved
    assert items[0].pid == 2
    assert all("rerank" in item.stages for item in items)
    assert [i.score for i in items] == sorted((i.score for i in items), reverse=True)


@pytest.mark.skipif(not (DATASET_ROOT / "samples" / "corpus.parquet").exists(), reason="sample dataset not built")
def test_sample_dataset_recall_at_10(index_dir: Path) -> None:
    dataset = load_dataset("default")
    labeled = [q for q in dataset.questions if q.relevant]
    recall = {}
    for retriever in RETRIEVERS:
        target = prepared(index_dir, dataset.passages, retriever=retriever)
        hits = [len(q.relevant & set(ranked_pids(target, q.text)[:10])) / len(q.relevant) for q in labeled]
        recall[retriever] = sum(hits) / len(hits)
    assert all(value > 0.6 for value in recall.values()), recall
    assert len(set(recall.values())) == 3, recall


def test_bm25_shortcut_selects_what_normalising_every_row_selects() -> None:
    # _bm25_top must pick exactly top_rows(raw / top, ...): ties, zeros, values one float32
    # step apart (they can tie after the division) and every threshold.
    from evalcore.targets.retrievers import _bm25_top, top_rows

    rng = np.random.default_rng(5)
    for case in range(400):
        size = int(rng.integers(1, 300))
        raw = rng.choice(rng.random(int(rng.integers(1, 40))) * 20, size).astype(np.float32)
        raw[rng.random(size) < 0.3] = 0.0
        if case % 3 == 0:  # neighbours of the k-th value, one or two ulps below it
            picks = rng.integers(0, size, 5)
            raw[picks] = np.nextafter(raw[picks], np.float32(0))
        top = float(raw.max())
        threshold, k = float(rng.choice([0.0, 0.2, 0.9, 1.0])), int(rng.integers(1, 40))
        norm = raw / top if top > 0 else np.zeros_like(raw)
        expected = top_rows(norm, (raw > 0) & (norm >= threshold), k)
        assert _bm25_top(raw, top, threshold, k).tolist() == expected.tolist(), case



@pytest.mark.parametrize("seed", range(4))
def test_bm25_shortcut_selects_the_same_rows_whichever_share_of_the_top_bounds_them(seed: int) -> None:
    # Skewed scores (a few high, many low: a frequent word in most chunks), so that the k best lie above half the top
    # score, above a quarter, above an eighth, or not even there (every positive row then): the same rows as
    # normalising every row, in each case.
    from evalcore.targets.retrievers import _bm25_top, top_rows

    shares = (0.5, 0.25, 0.125)

    rng = np.random.default_rng(seed)
    bounded_by: set[float] = set()
    for case in range(300):
        size = int(rng.choice([5, 60, 800, 3000]))
        raw = (rng.pareto(float(rng.choice([0.5, 1.5, 4.0])), size) * 3).astype(np.float32)
        raw[rng.random(size) < float(rng.choice([0.0, 0.5, 0.95]))] = 0.0
        if case % 4 == 0:  # ties at the k-th value and one ulp under it
            raw[rng.integers(0, size, 20)] = np.float32(raw.max() * 0.3)
            raw[rng.integers(0, size, 5)] = np.nextafter(np.float32(raw.max() * 0.3), np.float32(0))
        top = float(raw.max())
        threshold, k = float(rng.choice([0.0, 0.1, 0.3])), int(rng.choice([1, 3, 30, 100]))
        norm = raw / top if top > 0 else np.zeros_like(raw)
        expected = top_rows(norm, (raw > 0) & (norm >= threshold), k)
        assert _bm25_top(raw, top, threshold, k).tolist() == expected.tolist(), (seed, case)
        if top > 0:
            bounded_by.add(next((share for share in shares if np.count_nonzero(raw >= top * share) >= k), 0.0))
    assert bounded_by == {*shares, 0.0}  # every way of bounding the candidates was taken


def test_bm25_hits_carry_both_stage_scores_rounded_and_the_normalised_score_whole(index_dir: Path) -> None:
    # The BM25 retriever's hits, as the generic construction of hits writes them for the other retrievers.
    from evalcore.targets.retrievers import _hits, bm25_scores, search

    target = prepared(index_dir, corpus(), retriever="bm25", keyword_threshold=0.0, embedding_top_k=12)
    assert target.kb is not None
    for question, _ in QUESTIONS:
        hits = search(target.kb, target.config, question)
        raw = bm25_scores(target.kb, question)
        rows = np.array([hit.row for hit in hits], dtype=np.int64)
        norm = raw[rows] / float(raw.max())
        assert hits == _hits(target.kb, rows, norm, {"bm25": raw[rows], "bm25_norm": norm})
        assert hits[0].item.stages == {"bm25": round(float(raw.max()), 6), "bm25_norm": 1.0}


def test_campaigns_building_one_index_at_once_build_it_once_and_a_waiting_one_can_cancel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from evalcore.targets import knowledge

    passages = corpus()
    name = build_knowledge_base(passages, chunk_size=None, cache_dir=tmp_path / "probe").folder.name
    clear_memo()
    builds: list[int] = []
    real_build = knowledge._build
    monkeypatch.setattr(knowledge, "_build", lambda *args: builds.append(1) or real_build(*args))
    waiting: set[str] = set()

    def campaign() -> None:
        def progress(done: int, total: int, step: str = "") -> None:
            if step == "waiting for another campaign building the same index":
                waiting.add(threading.current_thread().name)

        build_knowledge_base(passages, chunk_size=None, cache_dir=tmp_path / "shared", progress=progress)

    with knowledge.building(tmp_path / "shared" / name, None):  # a build in progress: the campaigns wait for it
        threads = [threading.Thread(target=campaign) for _ in range(3)]
        for thread in threads:
            thread.start()
        while len(waiting) < 3:
            threading.Event().wait(0.05)
    for thread in threads:
        thread.join()
    assert len(builds) == 1  # the first to get the lock built it; the others loaded it

    class Cancelled(Exception):
        pass

    def cancel(done: int, total: int, step: str = "") -> None:
        if step.startswith("waiting"):
            raise Cancelled

    clear_memo()
    with knowledge.building(tmp_path / "shared" / name, None), pytest.raises(Cancelled):
        build_knowledge_base(passages, chunk_size=None, cache_dir=tmp_path / "shared", progress=cancel)


@pytest.mark.parametrize("settings", [{}, {"keyword_threshold": 0.0, "embedding_top_k": 50}])
def test_bm25_hits_are_the_same_with_and_without_the_compiled_loop(index_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    settings: dict[str, object]) -> None:
    from evalcore.targets import bm25
    from evalcore.targets.retrievers import search
    from tests.conftest import require_c

    require_c(bm25.best_library())
    target = prepared(index_dir, corpus(), retriever="bm25", **settings)
    assert target.kb is not None
    questions = [question for question, _ in QUESTIONS] + ["nothing matches zzzz", ""]
    compiled = [search(target.kb, target.config, question) for question in questions]
    monkeypatch.setattr(bm25, "best_library", lambda: None)
    assert [search(target.kb, target.config, question) for question in questions] == compiled
    assert any(compiled)
