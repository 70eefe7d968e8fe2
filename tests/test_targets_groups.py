"""The setting groups of a target configuration change nothing a user or a store sees: the flat keys, their order,
the TOML text, the stored snapshot and the configuration hash are those of the flat class the groups replaced."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from evalcore.errors import EvalError
from evalcore.targets import TargetConfig
from evalcore.targets.presets import PRESETS
from evalcore.targets.target_config import FLAT, KEYS, SETTING_GROUPS, key_reference

RICH = {
    "kind": "rag", "knowledge_base": "scifact", "chunking": "tokens", "chunk_size": 120, "chunk_overlap": 20,
    "query_transform": "multi_query", "multi_query_n": 4, "retriever": "hybrid", "embedding_model": "e5",
    "fusion": "weighted", "fusion_weight": 0.7, "reranker": "http", "rerank_url": "http://localhost:8080/rerank",
    "rerank_model": "bge", "rerank_top_k": 12, "generator": "openai", "model": "gpt-4o-mini",
    "base_url": "http://127.0.0.1:9/v1", "temperature": 0.2, "top_k": 40, "context_top_k": 7,
    "system_prompt": "Answer briefly.", "fallback_answer": "No idea.", "max_rounds": 2, "history": "references",
    "judge_kind": "openai", "judge_model": "judge-x", "judge_base_url": "http://127.0.0.1:9/v1",
    "judge_deployment": "dep1", "judge_api_version": "2024-06-01", "judge_api_key_header": "api-key",
    "judge_temperature": 0.1, "judge_max_tokens": 500, "judge_thresholds": {"groundedness": 4.0, "claims": 0.8},
    "rubrics": {"politeness": "[criteria]\nThe answer is polite."},
    "graded_label_min": 1, "graded_label_max": 3, "graded_thresholds": {"ndcg@3": 0.5, "holes_threshold": 2.0},
    "generation_pass_rougel": 0.4, "executor": "dask", "scheduler": "tcp://127.0.0.1:8786", "max_cost": 2.5,
    "answer_similarity_model": "use",
}
AGENT = {
    "kind": "http_agent", "agent_url": "https://agent.example/ask", "agent_body": '{"q": "{question}", "id": "{qid}"}',
    "agent_answer_path": "data.answer", "agent_sources_path": "data.sources", "agent_source_file": "file",
    "agent_headers": {"Authorization": "Bearer ${TOKEN}", "X-Team": "eval"}, "judge_kind": "local",
    "max_reply_chars": 5000,
}

# The flat keys in the order the flat class declared them (its to_dict, its TOML file, the docs' key table).
ORDER = (
    "kind", "knowledge_base", "chunking", "chunk_size", "chunk_overlap", "query_transform", "multi_query_n",
    "rewrite_prompt", "hyde_prompt", "query_max_tokens", "retriever", "embedding_model", "keyword_threshold",
    "vector_threshold", "embedding_top_k", "fusion", "fusion_weight", "rrf_k", "reranker", "rerank_model",
    "rerank_url", "rerank_api_key_env", "rerank_top_k", "rerank_threshold", "generator", "base_url", "model",
    "api_key_env", "deployment", "api_version", "api_key_header", "structured_output", "timeout", "retries",
    "retry_backoff", "system_prompt", "prompt_template", "context_template", "context_top_k", "extractive_sentences",
    "temperature", "top_p", "top_k", "repeat_penalty", "max_tokens", "max_reply_chars", "fallback_answer",
    "max_rounds", "history", "agent_url", "agent_body", "agent_answer_path", "agent_sources_path", "agent_source_id",
    "agent_source_title", "agent_source_text", "agent_source_file", "agent_headers", "results_path", "judge_kind",
    "judge_base_url", "judge_model", "judge_api_key_env", "judge_deployment", "judge_api_version",
    "judge_api_key_header", "judge_structured_output", "judge_temperature", "judge_max_tokens", "judge_thresholds",
    "judge_prompts", "rubrics", "answer_similarity_model", "graded_label_min", "graded_label_max",
    "graded_thresholds", "generation_pass_rougel", "generation_pass_coverage", "executor", "scheduler", "max_cost",
)
# Computed by the flat class on the same configurations: hashes, and sha256 of the texts it wrote.
EXPECTED = {
    "preset:quick": "c9ae94fde37d9d0b2e17f80863fc9707716748de3f875fb0bc1b3a041dc95528",
    "preset:default": "425486c645a6d4acb6bfbc15c3f0353fb9ac3a41e86ec3ebfcd3c6a7b0a8b3ee",
    "rich": "cc4af209977a8115e5f2c9cf0d6f11f6166dd5745e50348cffd7cdd62f4d7e58",
    "rich:toml": "4b3fa3add40f85a96013a27f658a27bd1eea07c64213047f8a701af91e816512",
    "rich:toml_all": "af32615c8ea2b8f5fd8cc9669e202a32e10c420cc757fba69cf2826570bce3d9",
    "rich:json": "87dfdeaef1f32b8a28276ffb53e62969e077a33820de5aaaa27d4bef510f3e9c",
    "rich:diff": "e8b6a4c89f5182d84129c8851bd55b9800aaebe0e154cb581b7a977117d88ef4",
    "rich:describe": ("hybrid weighted · E5 embeddings · chunks 120/20 · multi-query 4 · rerank http · gpt-4o-mini · "
                      "k=7"),
    "agent": "4b2bce72cce58b683550d2b4cc353fc71258babebc085ee013fb2941d35ab2ed",
    "agent:toml": "08eb94fe8467dbad7127085c2e148b8c10fc9cfa647be6bc49ada6c04c1b0399",
    "agent:toml_all": "012a760a740b7fd53766e606a2af442f81a58c5d26ff4b2c15fbb53858bc38f1",
    "agent:json": "5f3499024ef263b9fe686af92598531a3d45264b58a8bd4ff67a469af00c9af3",
    "agent:diff": "581d88fd54ca90babf60b8675d12d3b02931cb9dee8121549c9ef4fd237f1a8b",
    "agent:describe": "agent agent.example",
    "key_reference": "c7b11d2b330aed2f5185bb16bfe870810db9f5c7a497d3a5a1e6022e71786a5c",
    "default_json": "8d74c0a5da926ff3d2ffdc66c2566358835835fd745ad77ceae5e1caa208780d",
    "sections": "ba129c21dff188bfffa0e2701027dfc8e096ffbb47218032ee415fe19bf10aa6",
}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_flat_keys_and_their_order_are_those_of_the_flat_class() -> None:
    assert tuple(TargetConfig().to_dict()) == ORDER
    assert tuple(KEYS) == ORDER
    assert tuple(FLAT) == ORDER
    assert sha(json.dumps(TargetConfig().to_dict())) == EXPECTED["default_json"]
    assert sha(key_reference()) == EXPECTED["key_reference"]
    assert sha(json.dumps(TargetConfig.sections())) == EXPECTED["sections"]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_hashes_unchanged(name: str) -> None:
    config = PRESETS[name].config
    assert config.config_hash() == EXPECTED[f"preset:{name}"]
    assert TargetConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(("name", "data"), [("rich", RICH), ("agent", AGENT)])
def test_configurations_read_and_write_as_before(name: str, data: dict[str, Any], tmp_path: Path) -> None:
    config = TargetConfig.from_dict(data)
    assert config.config_hash() == EXPECTED[name]
    assert sha(config.to_toml()) == EXPECTED[f"{name}:toml"]
    assert sha(config.to_toml(all_keys=True)) == EXPECTED[f"{name}:toml_all"]
    assert sha(json.dumps(config.to_dict())) == EXPECTED[f"{name}:json"]
    assert sha(json.dumps(TargetConfig().diff(config))) == EXPECTED[f"{name}:diff"]
    assert config.describe() == EXPECTED[f"{name}:describe"]
    flat = config.to_dict()
    for key, value in data.items():  # every key given reads back under its own name
        assert flat[key] == value, key
    assert TargetConfig.stored(flat) == config
    assert TargetConfig.of(**{key: config.value(key) for key in data}) == config
    path = tmp_path / "target.toml"
    path.write_text(config.to_toml(), encoding="utf-8")
    assert TargetConfig.from_toml(path) == config


def test_every_key_reads_through_its_group() -> None:
    config = TargetConfig.from_dict(RICH)
    for key, (group, _) in FLAT.items():
        holder = config if group is None else getattr(config, group)
        assert getattr(holder, key) == config.value(key), key


def test_group_attributes_are_never_key_names() -> None:
    assert not set(SETTING_GROUPS) & set(FLAT)
    assert {f.name for f in dataclasses.fields(TargetConfig)} == {"kind", "knowledge_base", *SETTING_GROUPS}


def test_a_key_declared_in_two_groups_is_refused() -> None:
    from evalcore.targets.target_config import flat_keys, setting

    @dataclasses.dataclass(frozen=True)
    class Twice:
        top_k: int = setting(0, "the generator's top_k declared again")

    groups = dict(SETTING_GROUPS)
    groups["twice"] = Twice
    with pytest.raises(ValueError, match="top_k"):
        flat_keys(groups)


def test_with_values_routes_each_key_to_its_group() -> None:
    config = TargetConfig.of(top_k=3, judge_model="x", retriever="bm25")
    assert (config.generation.top_k, config.judge.judge_model, config.retrieval.retriever) == (3, "x", "bm25")
    assert config.diff(TargetConfig()).keys() == {"top_k", "judge_model", "retriever"}
    variant = TargetConfig.from_dict(RICH).with_values(top_k=7, kind="rag")
    assert variant.diff(TargetConfig.from_dict(RICH)) == {"top_k": (7, 40)}
    assert variant.judge == TargetConfig.from_dict(RICH).judge
    with pytest.raises(EvalError) as caught:
        TargetConfig.of(top_kk=3)
    assert "did you mean top_k?" in str(caught.value)


def test_overlay_and_sweep_take_whole_groups_and_single_keys() -> None:
    rich = TargetConfig.from_dict(RICH)
    mixed = TargetConfig().overlay(rich, "retrieval", "judge")
    assert mixed.retrieval == rich.retrieval
    assert mixed.judge == rich.judge
    assert mixed.generation == TargetConfig().generation
    swept = rich.sweep("rerank_top_k", [5, 10])
    assert [config.rerank.rerank_top_k for config in swept] == [5, 10]
    assert [set(config.diff(rich)) for config in swept] == [{"rerank_top_k"}, {"rerank_top_k"}]


def test_unknown_keys_still_suggest_the_flat_name() -> None:
    with pytest.raises(EvalError) as caught:
        TargetConfig.from_dict({"judge_modle": "x", "chunk_sise": 3})
    assert caught.value.problems == ["judge_modle: unknown key (did you mean judge_model?)",
                                     "chunk_sise: unknown key (did you mean chunk_size?)"]


def test_code_written_with_flat_keys_builds_and_is_told_where_a_key_is_read() -> None:
    """Notebooks written before the groups: `TargetConfig(retriever=...)` builds the same configuration as
    TargetConfig.of; `config.retriever` is refused with the group it is read in, not a bare AttributeError."""
    built = TargetConfig(retriever="bm25", top_k=3, kind="rag")  # type: ignore[call-arg]
    assert built == TargetConfig.of(retriever="bm25", top_k=3)
    assert built.retrieval.retriever == "bm25"
    assert dataclasses.replace(built, kind="http_agent").retrieval.retriever == "bm25"
    with pytest.raises(AttributeError, match=r"config\.retrieval\.retriever"):
        built.retriever  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        built.nothing  # type: ignore[attr-defined]  # noqa: B018
