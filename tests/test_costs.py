"""What model calls cost: the price table (default, the operator's file, its errors), each question's and each role's
cost priced from the tokens the loopback server reported, campaign totals, budgets."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalcore.campaigns import CampaignManager, campaign_results, campaign_summary
from evalcore.campaigns.launching import LaunchRequest
from evalcore.costs import Cost, Usage, money, price_table, priced
from evalcore.costs.prices import PRICES_FILE
from evalcore.errors import EvalError
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer, Reply

PRICES = ("model,input,output,cached_input,currency,read,same_as\n"
          "loop-gen,2.50,10.00,1.25,USD,2026-11-30,\n"
          "loop-judge,0.15,0.60,,USD,2026-11-30,\n"
          "my-azure-deployment,,,,,,gpt-4o-mini\n")
GEN_TOKENS, JUDGE_TOKENS = (1234, 567), (890, 45)


@pytest.fixture
def prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "operator-prices.csv"
    path.write_text(PRICES, encoding="utf-8")
    monkeypatch.setenv("EVALCORE_PRICES", str(path))
    return path


def test_the_default_table_is_dated_and_prices_common_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALCORE_PRICES", raising=False)
    table = price_table(None)
    price = table.find("openai:gpt-4o-mini@https://api.openai.com/v1")
    assert price is not None
    assert (price.input, price.output, price.cached_input) == (0.15, 0.60, 0.075)
    assert price.currency == "USD"
    assert price.read
    assert price.source == "default table"
    assert table.find("gpt-4o-2024-08-06") == table.find("gpt-4o")  # a dated snapshot as its model
    assert table.find("local:smollm2-135m-instruct") is None


def test_the_operator_file_extends_the_table_and_maps_a_deployment(prices: Path) -> None:
    table = price_table(None)
    assert table.find("openai:loop-gen@http://127.0.0.1:1/v1").input == 2.50  # type: ignore[union-attr]
    azure = table.find("openai:my-azure-deployment@https://x.openai.azure.com|deployment:my-azure-deployment")
    assert azure == table.find("gpt-4o-mini")
    assert table.files == (str(prices),)


def test_a_file_beside_the_store_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALCORE_PRICES", raising=False)
    (tmp_path / PRICES_FILE).write_text("model,input,output,currency\ngpt-4o,3,12,EUR\n", encoding="utf-8")
    price = price_table(str(tmp_path / "evalcore.db")).find("gpt-4o")
    assert price is not None
    assert (price.input, price.currency) == (3.0, "EUR")


@pytest.mark.parametrize(("row", "column", "words"), [
    ("gpt-x,-1,2,USD", "input", "negative"),
    ("gpt-x,1,abc,USD", "output", "not a number"),
    ("gpt-x,1,2,dollars", "currency", "not a currency code"),
    ("gpt-x,1,nan,USD", "output", "not finite"),
])
def test_a_bad_price_is_named_by_file_row_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: str,
                                                     column: str, words: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(f"model,input,output,currency\ngpt-4o,1,2,USD\n{row}\n", encoding="utf-8")
    monkeypatch.setenv("EVALCORE_PRICES", str(path))
    with pytest.raises(EvalError) as caught:
        price_table(None)
    assert caught.value.where == f"{path} row 3, column {column}"
    assert words in caught.value.line()


def test_a_missing_file_and_a_bad_header_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_PRICES", str(tmp_path / "nowhere.csv"))
    with pytest.raises(EvalError, match="does not exist"):
        price_table(None)
    path = tmp_path / "header.csv"
    path.write_text("name,price\ngpt-4o,1\n", encoding="utf-8")
    monkeypatch.setenv("EVALCORE_PRICES", str(path))
    with pytest.raises(EvalError, match="header") as caught:
        price_table(None)
    assert caught.value.where == f"{path} row 1"


def test_a_total_says_no_price_rather_than_zero_and_refuses_a_currency_mix() -> None:
    table = price_table(None)
    uses = [priced("generator", "gpt-4o", 1000, 100, table), priced("judge:score", "local:smollm2", 50, 5, table)]
    cost = Cost.of(uses)
    assert cost.amount is None
    assert cost.text() == "no price (local:smollm2)"
    mixed = Cost.of([Usage("generator", "a", 1, 1, 0.5, "USD"), Usage("judge:x", "b", 1, 1, 0.2, "EUR")])
    assert mixed.amount is None
    assert mixed.text() == "no total (prices in EUR and USD)"
    assert Cost.of([]).text() == "0"
    assert money(0.0072, "USD") == "0.0072 USD"
    assert money(12.345, "EUR") == "12.35 EUR"


def scripted(path: str, body: dict[str, Any]) -> Reply:
    """The generator's and the judge's replies with their own token counts."""
    if body["model"] == "loop-judge":
        return Reply(json.dumps({"score": 4, "reason": "Close to the reference."}), prompt_tokens=JUDGE_TOKENS[0],
                     completion_tokens=JUDGE_TOKENS[1])
    return Reply("Refunds are accepted within 30 days.", prompt_tokens=GEN_TOKENS[0], completion_tokens=GEN_TOKENS[1])


def loop_config(server: FakeOpenAIServer, **keys: Any) -> TargetConfig:
    return TargetConfig.from_dict({"generator": "openai", "base_url": server.base_url, "model": "loop-gen",
                                   "api_key_env": "", "retriever": "bm25", "judge_model": "loop-judge",
                                   "judge_api_key_env": "", **keys})


def test_cost_equals_tokens_times_price_to_the_cent(prices: Path, tmp_path: Path, tiny_dataset: Path) -> None:
    manager = CampaignManager(tmp_path / "cost.db")
    try:
        with FakeOpenAIServer(scripted) as server:
            campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=loop_config(server),
                                                       judges=("score",)))
            manager.wait(campaign_id, timeout=60)
        results = campaign_results(manager.store, campaign_id)
        summary = campaign_summary(manager.store, campaign_id)
    finally:
        manager.close()
    answer = (GEN_TOKENS[0] * 2.50 + GEN_TOKENS[1] * 10.00) / 1e6
    judging = (JUDGE_TOKENS[0] * 0.15 + JUDGE_TOKENS[1] * 0.60) / 1e6
    judged = [result for result in results if result.outcome.judges["score"].tokens]
    assert len(results) == 3
    assert len(judged) == 2  # one question has no reference answer: not judged, no judge call
    for result in results:
        expected = answer + (judging if result in judged else 0.0)
        cost = result.outcome.cost
        assert cost.currency == "USD"
        assert round(cost.amount or 0, 2) == round(expected, 2)
        assert cost.amount == pytest.approx(expected, rel=1e-12)
        roles = {use.role: use for use in result.outcome.usage}
        assert (roles["generator"].prompt, roles["generator"].completion) == GEN_TOKENS
        if result in judged:
            assert (roles["judge:score"].prompt, roles["judge:score"].completion) == JUDGE_TOKENS
    assert summary.cost.amount == pytest.approx(3 * answer + 2 * judging, rel=1e-12)
    assert {use.role for use in summary.usage} == {"generator", "judge:score"}


GEN_CACHED, JUDGE_CACHED = 1000, 800


def scripted_with_cache(path: str, body: dict[str, Any]) -> Reply:
    """`scripted`'s replies, with part of each prompt read from the provider's prompt cache."""
    reply = scripted(path, body)
    return replace(reply, cached_tokens=JUDGE_CACHED if body["model"] == "loop-judge" else GEN_CACHED)


def test_cached_prompt_tokens_are_priced_at_the_cached_input_price(prices: Path, tmp_path: Path,
                                                                   tiny_dataset: Path) -> None:
    manager = CampaignManager(tmp_path / "cached.db")
    try:
        with FakeOpenAIServer(scripted_with_cache) as server:
            asked = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=loop_config(server),
                                                 judges=("score",)))
            manager.wait(asked, timeout=60)
            calls = len(server.requests)
            # The same campaign again: every reply comes from the call cache, with the cached tokens it was given.
            again = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=loop_config(server),
                                                 judges=("score",)))
            manager.wait(again, timeout=60)
            assert len(server.requests) == calls
        summaries = [campaign_summary(manager.store, campaign) for campaign in (asked, again)]
        results = campaign_results(manager.store, asked)
    finally:
        manager.close()
    # loop-gen has a cached-input price (1.25); loop-judge has none, so its cached tokens cost the input price.
    answer = ((GEN_TOKENS[0] - GEN_CACHED) * 2.50 + GEN_CACHED * 1.25 + GEN_TOKENS[1] * 10.00) / 1e6
    judging = (JUDGE_TOKENS[0] * 0.15 + JUDGE_TOKENS[1] * 0.60) / 1e6
    for result in results:
        roles = {use.role: use for use in result.outcome.usage}
        assert (roles["generator"].prompt, roles["generator"].cached) == (GEN_TOKENS[0], GEN_CACHED)
        assert roles["generator"].cost == pytest.approx(answer, rel=1e-12)
        if "judge:score" in roles:
            assert roles["judge:score"].cached == JUDGE_CACHED
            assert result.outcome.judges["score"].cached_prompt_tokens == JUDGE_CACHED
            assert roles["judge:score"].cost == pytest.approx(judging, rel=1e-12)
    for summary in summaries:
        assert summary.cost.amount == pytest.approx(3 * answer + 2 * judging, rel=1e-12)
        assert {use.role: use.cached for use in summary.usage} == {"generator": 3 * GEN_CACHED,
                                                                   "judge:score": 2 * JUDGE_CACHED}


def test_usage_stored_before_cached_tokens_reads_back() -> None:
    assert Usage.from_json(["generator", "m", 10, 2, 0.5, "USD"]) == Usage("generator", "m", 10, 2, 0.5, "USD", 0)
    kept = Usage("generator", "m", 10, 2, 0.5, "USD", 4)
    assert Usage.from_json(json.loads(json.dumps(kept.to_json()))) == kept


def test_a_comparison_gives_the_cost_per_question_beside_quality(prices: Path, tmp_path: Path,
                                                                 tiny_dataset: Path) -> None:
    from evalcore.compare import compare_campaigns

    def cheap(path: str, body: dict[str, Any]) -> Reply:
        return Reply("Refunds are accepted within 30 days.", prompt_tokens=1000, completion_tokens=100)

    manager = CampaignManager(tmp_path / "compare.db")
    try:
        with FakeOpenAIServer(cheap) as server:
            a = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=loop_config(server)))
            manager.wait(a, timeout=60)
            b = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=loop_config(
                server, model="gpt-4o-mini")))
            manager.wait(b, timeout=60)
        comparison = compare_campaigns(manager.store, a, b)
        again = compare_campaigns(manager.store, a, b)  # read back from the store
    finally:
        manager.close()
    cost_a, cost_b = (1000 * 2.50 + 100 * 10.00) / 1e6, (1000 * 0.15 + 100 * 0.60) / 1e6
    cost = comparison.cost
    assert cost is not None
    assert cost.n == 3
    assert cost.currency == "USD"
    assert cost.mean_a == pytest.approx(cost_a)
    assert cost.mean_b == pytest.approx(cost_b)
    assert cost.delta == pytest.approx(cost_b - cost_a)
    assert cost.ci_low == pytest.approx(cost_b - cost_a)
    assert comparison.trade_off.endswith(f"at {cost_b / cost_a:.2g}x the cost per question")
    assert comparison.trade_off.startswith("B: ")
    assert again.cost == cost
    assert again.to_dict()["trade_off"] == comparison.trade_off
    from evalcore.cli.compare import format_comparison
    from evalcore.compare.report import verdicts_section

    assert f"cost: {comparison.trade_off} (cost per question -" in "\n".join(format_comparison(comparison))
    assert f"Cost: {comparison.trade_off}" in verdicts_section(comparison)  # the HTML report's


def test_costs_in_two_currencies_are_not_compared() -> None:
    from evalcore.compare.costs import cost_delta

    refused = cost_delta([(0.01, "USD")] * 3, [(0.01, "EUR")] * 3, seed=0, resamples=100)
    assert refused.delta is None
    assert "A's prices are in USD, B's in EUR" in refused.refused
    assert refused.text().startswith("cost not compared: ")
    spread = cost_delta([(0.01, "USD"), (0.02, "USD"), (None, ""), (0.03, "USD")],
                        [(0.02, "USD"), (0.02, "USD"), (0.05, "USD"), (0.05, "USD")], seed=0, resamples=2000)
    assert spread.n == 3
    assert spread.unpriced == 1
    assert spread.delta == pytest.approx(0.01)
    assert spread.ci_low is not None
    assert spread.ci_high is not None
    assert spread.ci_low <= 0.01 <= spread.ci_high


def test_a_budget_stops_between_questions_and_a_larger_one_resumes(prices: Path, tmp_path: Path,
                                                                   tiny_dataset: Path) -> None:
    from evalcore.campaigns import get_campaign

    per_question = (GEN_TOKENS[0] * 2.50 + GEN_TOKENS[1] * 10.00) / 1e6
    manager = CampaignManager(tmp_path / "budget.db")
    try:
        # Each answer takes a second: the first one's cost is counted while the second is asked (a thread takes the
        # next question as soon as it is free), and the third is never asked.
        with FakeOpenAIServer(scripted, delay=1.0) as server:
            config = loop_config(server, max_cost=0.5 * per_question)
            campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, concurrency=1))
            stopped = manager.wait(campaign_id, timeout=60)
            assert stopped.status == "over_budget"
            assert stopped.finished == 2
            assert stopped.error is not None
            assert "stopped at its budget" in stopped.error
            assert "resume with a larger max_cost" in stopped.error
            assert len(server.requests) == 2  # no question asked past the budget
            manager.resume(campaign_id, max_cost=10 * per_question)
            done = manager.wait(campaign_id, timeout=60)
            assert len(server.requests) == 3  # only the question left
        assert done.status == "succeeded"
        assert done.finished == 3
        assert get_campaign(manager.store, campaign_id).config.target.execution.max_cost == 10 * per_question
        assert campaign_summary(manager.store, campaign_id).cost.amount == pytest.approx(3 * per_question)
    finally:
        manager.close()


def test_the_api_resumes_a_campaign_stopped_at_its_budget_with_a_larger_one(prices: Path, tmp_path: Path,
                                                                             tiny_dataset: Path) -> None:
    import httpx

    from evalcore.access.api_keys import create_key
    from evalcore.api.app import create_app
    from tests.test_api import serve

    per_question = (GEN_TOKENS[0] * 2.50 + GEN_TOKENS[1] * 10.00) / 1e6
    app: Any = create_app(tmp_path / "resume.db")
    manager = app.state.manager
    admin = {"Authorization": f"Bearer {create_key(app.state.store, tenant='default', role='admin')[1]}"}
    viewer = {"Authorization": f"Bearer {create_key(app.state.store, tenant='default', role='viewer')[1]}"}
    with FakeOpenAIServer(scripted, delay=1.0) as server, serve(app) as url:
        config = loop_config(server, max_cost=0.5 * per_question)
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, concurrency=1))
        assert manager.wait(campaign_id, timeout=60).status == "over_budget"
        path = f"{url}/api/v1/campaigns/{campaign_id}/resume"
        assert httpx.post(path, headers=viewer, json={"max_cost": 1}).status_code == 403
        refused = httpx.post(path, headers=admin, json={"max_cost": per_question})
        assert refused.status_code == 422
        assert refused.json()["error"]["field"] == "max_cost"
        assert "would stop it at once" in refused.json()["error"]["message"]
        assert httpx.post(path, headers=admin, json={"max_cost": -1}).status_code == 422
        resumed = httpx.post(path, headers=admin, json={"max_cost": 10 * per_question})
        assert resumed.status_code == 202, resumed.text
        done = manager.wait(campaign_id, timeout=60)
        assert (done.status, done.finished, len(server.requests)) == ("succeeded", 3, 3)
        shown = httpx.get(f"{url}/api/v1/campaigns/{campaign_id}", headers=admin).json()["data"]
        assert shown["campaign"]["config"]["max_cost"] == 10 * per_question
        assert httpx.post(path, headers=admin).status_code == 422  # every question has a result


def test_the_campaigns_page_resumes_a_campaign_stopped_at_its_budget_with_a_larger_one(
        prices: Path, tmp_path: Path, tiny_dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.campaigns import get_manager
    from tests.test_dashboard import assert_clean, page_test

    per_question = (GEN_TOKENS[0] * 2.50 + GEN_TOKENS[1] * 10.00) / 1e6
    db = str(tmp_path / "page.db")
    manager = get_manager(db)
    with FakeOpenAIServer(scripted, delay=1.0) as server:
        config = loop_config(server, max_cost=0.5 * per_question)
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, concurrency=1))
        assert manager.wait(campaign_id, timeout=60).status == "over_budget"
        at = page_test(db, monkeypatch, "pages/campaigns.py")
        assert_clean(at)
        budget = at.number_input(key=f"budget-{campaign_id}")
        assert budget.value == pytest.approx(per_question)  # twice the old budget to start with
        budget.set_value(10 * per_question).run()
        next(b for b in at.button if b.label == "Resume").click().run()
        assert_clean(at)
        done = get_manager(db).wait(campaign_id, timeout=60)
        assert (done.status, done.finished, len(server.requests)) == ("succeeded", 3, 3)
        assert done.config["max_cost"] == pytest.approx(10 * per_question)


def test_a_tenant_over_its_daily_budget_is_stopped_and_refused(prices: Path, tmp_path: Path, tiny_dataset: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    per_question = (GEN_TOKENS[0] * 2.50 + GEN_TOKENS[1] * 10.00) / 1e6
    monkeypatch.setenv("EVALCORE_DAILY_BUDGET", f"default={per_question / 2:.10f},other=5")
    manager = CampaignManager(tmp_path / "daily.db")
    try:
        with FakeOpenAIServer(scripted, delay=1.0) as server:
            campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=loop_config(server),
                                                       concurrency=1))
            stopped = manager.wait(campaign_id, timeout=60)
            assert stopped.status == "over_budget"
            assert stopped.finished == 2
            assert stopped.error is not None
            assert "tenant default's daily budget" in stopped.error
            with pytest.raises(EvalError, match="daily budget is spent") as refused:
                manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=loop_config(server)))
            assert refused.value.where == "EVALCORE_DAILY_BUDGET"
    finally:
        manager.close()
    monkeypatch.setenv("EVALCORE_DAILY_BUDGET", "default=lots")
    with pytest.raises(EvalError, match="not an amount"):
        from evalcore.campaigns.budget import daily_budgets

        daily_budgets()


def test_each_role_is_priced_with_its_own_model(prices: Path, tmp_path: Path, tiny_dataset: Path) -> None:
    def by_role(path: str, body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "Does the passage help" in prompt:
            return Reply("yes", prompt_tokens=100, completion_tokens=1)
        if body["model"] == "gpt-4o-mini":  # the query rewrite and the answer share the generator's model
            if prompt.startswith("Rewrite the question"):  # the question itself back: retrieval finds its passages
                return Reply(prompt.rpartition("Question: ")[2], prompt_tokens=40, completion_tokens=5)
            return Reply("Refunds are accepted within 30 days.", prompt_tokens=900, completion_tokens=30)
        return Reply("?", prompt_tokens=1, completion_tokens=1)

    manager = CampaignManager(tmp_path / "roles.db")
    try:
        with FakeOpenAIServer(by_role) as server:
            config = TargetConfig.from_dict({
                "generator": "openai", "base_url": server.base_url, "model": "gpt-4o-mini", "api_key_env": "",
                "retriever": "bm25", "query_transform": "rewrite", "reranker": "llm", "rerank_url": server.base_url,
                "rerank_model": "loop-gen", "rerank_api_key_env": ""})
            campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, limit=1))
            manager.wait(campaign_id, timeout=60)
            reranks = sum(1 for _, body, _ in server.requests if "Does the passage help" in
                          body["messages"][-1]["content"])
        [result] = campaign_results(manager.store, campaign_id)
    finally:
        manager.close()
    roles = {use.role: use for use in result.outcome.usage}
    assert set(roles) == {"generator", "query", "rerank"}
    assert (roles["rerank"].prompt, roles["rerank"].completion) == (100 * reranks, reranks)
    assert reranks > 0
    assert roles["rerank"].cost == pytest.approx((100 * reranks * 2.50 + reranks * 10.00) / 1e6)
    assert roles["generator"].cost == pytest.approx((900 * 0.15 + 30 * 0.60) / 1e6)
    assert roles["query"].cost == pytest.approx((40 * 0.15 + 5 * 0.60) / 1e6)
    assert result.outcome.cost.amount == pytest.approx(sum(use.cost or 0 for use in roles.values()))


def test_an_estimate_from_the_prompts_then_from_the_campaign_itself(prices: Path, tmp_path: Path,
                                                                     tiny_dataset: Path) -> None:
    manager = CampaignManager(tmp_path / "estimate.db")
    try:
        with FakeOpenAIServer(scripted) as server:
            request = LaunchRequest(dataset=str(tiny_dataset), config=loop_config(server), judges=("score",))
            before = manager.estimate(request)
            assert server.requests == []  # nothing asked
            campaign_id = manager.launch(request)
            manager.wait(campaign_id, timeout=60)
            after = manager.estimate(request)
        actual = campaign_summary(manager.store, campaign_id).cost
    finally:
        manager.close()
    assert before.method == "prompts"
    assert before.questions == 3
    assert before.total.currency == "USD"
    assert {use.role for use in before.usage} == {"generator", "judge:score"}
    assert 0 < (before.total.amount or 0) < 1
    assert after.method == "earlier"
    assert after.total.amount == pytest.approx(actual.amount)
    assert after.text().startswith(f"estimate: {actual.text()} for 3 questions: ")
    assert "from 1 earlier campaign of this configuration (3 questions)" in after.text()


def test_the_command_line_estimates_budgets_and_gates_the_cost(prices: Path, tmp_path: Path, tiny_dataset: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from evalcore.cli import main

    db = str(tmp_path / "cli.db")
    with FakeOpenAIServer(scripted, delay=1.0) as server:
        keys = ["--set", "generator=openai", "--set", f"base_url={server.base_url}", "--set", "model=loop-gen",
                "--set", "api_key_env=", "--set", "retriever=bm25"]
        run = ["run", "--db", db, "--dataset", str(tiny_dataset), "--concurrency", "1", *keys]
        assert main([*run, "--estimate"]) == 0
        assert "estimate: " in capsys.readouterr().out
        assert server.requests == []
        assert main([*run, "--max-cost", "0.001"]) == 1  # stopped at its budget
        shown = capsys.readouterr().out
        assert "status: over budget (stopped at its budget: " in shown
        assert "cost: 0.0175 USD" in shown
    assert main(["campaigns", "list", "--db", db]) == 0
    assert "over budget" in capsys.readouterr().out
    with FakeOpenAIServer(scripted) as server:
        keys[3] = f"base_url={server.base_url}"
        run = ["run", "--db", db, "--dataset", str(tiny_dataset), *keys]
        assert main([*run, "--fail-over-cost", "0.01"]) == 4
        assert "gate failed: cost <= 0.01 USD: the campaign cost 0.0263 USD, over the limit 0.01 USD" in \
            capsys.readouterr().out
        assert main([*run, "--fail-over-cost", "1"]) == 0


@pytest.mark.parametrize("clustered", [False, True])
def test_equal_costs_give_the_interval_resampling_gives_without_resampling(clustered: bool,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.compare import stats
    from evalcore.compare.costs import cost_delta

    a = [(0.0, ""), (0.02, "USD"), (0.0, ""), (0.5, "USD"), (None, "")]
    b = [(0.0, ""), (0.02, "USD"), (0.0, ""), (0.5, "USD"), (0.1, "USD")]
    clusters = ["c1", "c1", "c2", "c3", "c3"] if clustered else None
    resampled = cost_delta(a, b, seed=3, resamples=500, clusters=clusters)
    assert resampled.ci_low == 0.0
    assert resampled.ci_high == 0.0

    def no_resampling(*args: object, **kwargs: object) -> None:
        raise AssertionError("resampled equal costs")

    monkeypatch.setattr(stats, "resample_counts", no_resampling)
    shortcut = cost_delta(a, b, seed=3, resamples=500, clusters=clusters)
    assert shortcut == resampled
    assert str(shortcut.ci_low) == "0.0"
    one = cost_delta(a[:1], b[:1], seed=3, resamples=500)
    assert one.ci_low is None
