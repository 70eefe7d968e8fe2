"""Target configuration: defaults, validation naming the key, TOML, hash and diff, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.errors import EvalError
from evalcore.targets import TargetConfig


def test_seed_defaults() -> None:
    config = TargetConfig()
    assert (config.retrieval.keyword_threshold, config.retrieval.vector_threshold) == (0.3, 0.2)
    assert (config.retrieval.embedding_top_k, config.rerank.rerank_top_k) == (30, 30)
    assert config.rerank.rerank_threshold == 0.3
    assert config.prompts.fallback_answer == "Sorry, I am unable to answer this question."
    assert (config.kind, config.knowledge_base, config.generation.generator, config.retrieval.embedding_model) == (
        "rag", "default", "extractive", "use")


@pytest.mark.parametrize(("data", "key"), [
    ({"retriver": "bm25"}, "retriver"),
    ({"keyword_threshold": 1.5}, "keyword_threshold"),
    ({"vector_threshold": -2}, "vector_threshold"),
    ({"embedding_top_k": 0}, "embedding_top_k"),
    ({"embedding_top_k": 2.5}, "embedding_top_k"),
    ({"embedding_top_k": True}, "embedding_top_k"),
    ({"rerank_top_k": "30"}, "rerank_top_k"),
    ({"temperature": float("nan")}, "temperature"),
    ({"retriever": "splade"}, "retriever"),
    ({"reranker": "cohere"}, "reranker"),
    ({"generator": "openai"}, "model"),
    ({"reranker": "http"}, "rerank_url"),
    ({"chunking": "tokens", "chunk_size": 50, "chunk_overlap": 50}, "chunk_overlap"),
    ({"prompt_template": "Answer {question}"}, "prompt_template"),
    ({"context_template": "{text} {score}"}, "context_template"),
    ({"prompt_template": "{question} {context"}, "prompt_template"),
    ({"kind": "http_agent", "agent_url": "ftp://x"}, "agent_url"),
    ({"kind": "http_agent", "agent_url": "http://x", "agent_body": "{question}"}, "agent_body"),
    ({"kind": "results_file", "results_path": "run.csv"}, "results_path"),
    ({"results_path": "run.jsonl"}, "results_path"),  # a file named without kind = "results_file": never read
    ({"agent_headers": {"X-Key": 3}}, "agent_headers"),
    ({"agent_headers": [1, 2]}, "agent_headers"),
    ({"agent_headers": "Authorization: x"}, "agent_headers"),
])
def test_bad_values_are_rejected_naming_the_key(data: dict, key: str) -> None:
    with pytest.raises(EvalError) as caught:
        TargetConfig.from_dict(data)
    assert any(problem.startswith(f"{key}:") for problem in caught.value.problems), caught.value.problems


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(EvalError) as caught:
        TargetConfig.from_dict({"nope": 1, "rerank_top_k": -1, "fusion": "max"})
    assert sorted(p.split(":")[0] for p in caught.value.problems) == ["fusion", "nope", "rerank_top_k"]


def test_problems_say_what_is_expected() -> None:
    with pytest.raises(EvalError) as caught:
        TargetConfig.from_dict({"retreiver": "bm25", "chunk_size": "big", "model": 4, "rag": {"retriever": "bm25"}})
    assert caught.value.problems == [
        "retreiver: unknown key (did you mean retriever?)",
        ("rag: unknown table (keys are flat, at the top of the file; the only tables are [agent_headers], "
        "[judge_thresholds], [judge_prompts], [rubrics], [graded_thresholds])"),
        "chunk_size: expected a whole number, found 'big'",
        "model: expected text (a quoted string), found 4"]


def test_round_trip_hash_and_diff() -> None:
    config = TargetConfig.from_dict({"retriever": "bm25", "embedding_top_k": 10, "agent_headers": {"A": "${T}"},
                                     "agent_body": {"q": "{question}"}})
    assert TargetConfig.from_dict(config.to_dict()) == config
    assert config.config_hash() == TargetConfig.from_dict(config.to_dict()).config_hash()
    assert config.config_hash() != TargetConfig().config_hash()
    assert TargetConfig().diff(config) == {
        "retriever": ("hybrid", "bm25"), "embedding_top_k": (30, 10), "agent_headers": ({}, {"A": "${T}"}),
        "agent_body": ('{"question": "{question}"}', '{"q": "{question}"}')}
    assert config.diff(config) == {}


def test_toml_file_round_trip(tmp_path: Path) -> None:
    config = TargetConfig.from_dict({"retriever": "vector", "prompt_template": 'Q: "{question}"\n{context}\nA:',
                                     "agent_headers": {"Authorization": "Bearer ${TOKEN}"}})
    for all_keys in (False, True):
        path = tmp_path / f"t{all_keys}.toml"
        path.write_text(config.to_toml(all_keys=all_keys), encoding="utf-8")
        assert TargetConfig.from_toml(path) == config


def test_toml_errors_name_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("retriever = 'bm25'\nrerank_threshold = 3\n", encoding="utf-8")
    with pytest.raises(EvalError) as caught:
        TargetConfig.from_toml(path)
    assert caught.value.problems == [f"{path}: rerank_threshold: expected a value in [-1, 1], found 3.0"]
    path.write_text("retriever = \n", encoding="utf-8")
    with pytest.raises(EvalError, match="not valid TOML"):
        TargetConfig.from_toml(path)
    with pytest.raises(EvalError, match="not found"):
        TargetConfig.from_toml(tmp_path / "missing.toml")
    with pytest.raises(EvalError, match="cannot read the configuration"):
        TargetConfig.from_toml(tmp_path)  # a folder


def test_cli_config_show_check_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('retriever = "bm25"\n', encoding="utf-8")
    b.write_text('retriever = "bm25"\nembedding_top_k = 5\n', encoding="utf-8")
    assert main(["config", "show", str(a)]) == 0
    assert 'retriever = "bm25"' in capsys.readouterr().out
    assert main(["config", "check", str(a)]) == 0
    assert main(["config", "diff", str(a), str(b)]) == 1
    assert "embedding_top_k: 30 -> 5" in capsys.readouterr().out
    b.write_text("embedding_top_k = 0\n", encoding="utf-8")
    assert main(["config", "check", str(b)]) == 2
    assert "embedding_top_k: expected a value in [1, 1000]" in capsys.readouterr().err


def test_cli_ask_prints_passages_and_answer(tiny_dataset: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bm25.toml"
    config.write_text('retriever = "bm25"\nextractive_sentences = 1\n', encoding="utf-8")
    assert main(["ask", "--config", str(config), "--dataset", str(tiny_dataset), "--index-dir", str(tmp_path / "ix"),
                 "Quel est le délai ?"]) == 0
    out = capsys.readouterr().out
    assert "  1. pid=12 " in out
    assert "[CGV France]" in out
    assert out.rstrip().endswith("answer (extractive): Le délai de rétractation est de 14 jours calendaires.")


def test_config_save_and_list_from_the_command_line(tmp_path, capsys) -> None:
    from evalcore.cli import main
    from evalcore.store import Store
    from evalcore.targets.saved_targets import get_target

    toml = tmp_path / "bm25.toml"
    toml.write_text('retriever = "bm25"\nembedding_top_k = 10\n')
    db = str(tmp_path / "t.db")
    assert main(["config", "save", str(toml), "--name", "bm25 top10", "--db", db]) == 0
    target_id = capsys.readouterr().out.strip()
    with Store(db) as store:
        assert get_target(store, target_id) == TargetConfig.of(retriever="bm25", embedding_top_k=10)
    assert main(["config", "list", "--db", db]) == 0
    assert target_id in capsys.readouterr().out
    assert main(["config", "save", str(toml), "--tenant", "bad_tenant", "--db", db]) == 2


def test_the_made_name_tells_configurations_apart() -> None:
    assert TargetConfig().describe() == "hybrid RRF · USE embeddings · extractive"
    # Not the default.
    assert TargetConfig.of(retriever="bm25", embedding_top_k=5).describe() == "bm25 · top 5 · extractive"
    hybrid = TargetConfig.of(reranker="http", generator="openai", model="gpt-4o-mini", context_top_k=5)
    assert hybrid.describe() == "hybrid RRF · USE embeddings · rerank http · gpt-4o-mini · k=5"


def test_graded_thresholds_under_the_evaluators_names(tmp_path: Path) -> None:
    path = tmp_path / "graded.toml"
    path.write_text('[graded_thresholds]\nndcg_threshold = 0.7\ntop1_relevance_threshold = 2\n"xdcg@3" = 40\n'
                    "total_groundtruth_documents = 2\n", encoding="utf-8")
    config = TargetConfig.from_toml(path)
    assert dict(config.graded.graded_thresholds) == {"ndcg_threshold": 0.7, "top1_relevance_threshold": 2.0,
                                                     "xdcg@3": 40.0, "total_groundtruth_documents": 2.0}
    with pytest.raises(EvalError) as caught:
        TargetConfig.from_dict({"graded_thresholds": {"ndcg": 0.7}})
    assert caught.value.problems[0].startswith("graded_thresholds: unknown threshold 'ndcg' (known: ndcg_threshold,")


def test_default_models_fill_only_roles_without_a_model_and_name_bad_settings() -> None:
    from evalcore.targets.default_models import with_default_models

    env = {"EVALCORE_DEFAULT_CHAT_MODEL": "house", "EVALCORE_DEFAULT_RERANK_URL": "http://r/rerank"}
    config, used = with_default_models(TargetConfig.of(generator="local"), {"chat": None, "rerank": None}, env)
    assert (config.generation.generator, config.rerank.reranker, config.rerank.rerank_url) == ("local", "http", "http://r/rerank")
    assert used == {"chat": "the configuration's own chat model",
                    "rerank": "the default rerank model: http at http://r/rerank"}
    with pytest.raises(EvalError) as caught:
        with_default_models(TargetConfig(), {"rerank": None}, {**env, "EVALCORE_DEFAULT_RERANKER": "magic"})
    assert caught.value.where == "EVALCORE_DEFAULT_*"
    assert caught.value.problems[0].startswith("reranker: expected one of")
