"""Each value the dashboard shows has a human label, its count where it is a rate, and nothing says None."""

from __future__ import annotations

import pytest

from tests.test_dashboard import assert_clean, filled, open_section, page_test, unescape  # noqa: F401  (the fixture)


def test_the_campaigns_page_labels_panels_rates_and_stages_in_words(filled: dict,  # noqa: F811
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    ) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(filled["top2"]).run()
    assert_clean(at)
    captions = [c.value for c in at.caption]
    assert "Suite" not in captions
    assert "Coverage and sources" in captions  # a dataset campaign has no suite
    metrics = {m.label: m.value for m in at.metric}
    rates = {label: value for label, value in metrics.items() if label in ("false\\_abstention", "sources\\_found")}
    assert rates
    assert all(value.endswith(" of 12") for value in rates.values())
    assert all(value[:-6].endswith("%") for value in rates.values())
    shown = [*metrics.values(), *captions, *(str(df.value.to_dict()) for df in at.dataframe)]
    assert not any("None" in text for text in shown)
    open_section(at, "Failure stages", key="campaign-section")
    assert_clean(at)
    stages = next(unescape(c.value) for c in at.caption if unescape(c.value).endswith("(of 12 questions)"))
    assert sum(int(part.rsplit(" ", 1)[1]) for part in stages.split(" (of")[0].split(" · ")) == 12


def test_the_run_form_labels_settings_in_words_and_names_the_key_in_the_help(filled: dict,  # noqa: F811
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/run.py")
    assert_clean(at)
    labels = {w.key.removeprefix("cfg-quick-"): (w.label, w.help) for w in [*at.selectbox, *at.number_input,
                                                                              *at.text_input]
              if w.key and w.key.startswith("cfg-quick-") and w.key not in ("cfg-quick-executor",
                                                                            "cfg-quick-scheduler")}
    assert labels["knowledge_base"][0] == "Knowledge base"
    assert labels["kind"][0] == "Kind"
    assert labels["embedding_top_k"][0] == "Embedding top-k"
    assert labels["rrf_k"][0] == "RRF k"
    assert [key for key, (_, help_) in labels.items() if not unescape(help_).startswith(f"key {key} · ")] == []


def test_the_run_form_says_why_a_query_transformation_cannot_work_and_a_launch_says_what_it_does(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(str(tmp_path / "db.sqlite"), monkeypatch, "pages/run.py")
    assert_clean(at)
    options = at.selectbox(key="cfg-quick-query_transform").options  # the quick start's extractive generator
    assert options[0] == "none"
    assert (all(o.endswith("(needs generator openai or local, not extractive)")
                                        for o in options[1:]))
    at.number_input(key="limit").set_value(3)
    at.button(key="FormSubmitter:launch-Launch").click().run()
    assert_clean(at)
    [launching] = [block for block in at.main.children.values() if type(block).__name__ == "Status"]
    assert launching.label == "Launched 1 campaign: their progress is below"
    said = " ".join(unescape(m.value) for m in launching.markdown)
    assert "1 of 1: " in said
    assert "preparing: loading the questions, checking the settings" in said
    assert f"queued as {at.session_state['launched'][0]}" in said
