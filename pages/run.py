"""Run: pick the questions and a configuration (every key), launch, watch the progress, or sweep one key."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial
from typing import Any

import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.campaigns import Campaign, get_campaign, list_campaigns
from evalcore.campaigns.launching import LaunchRequest, linked_target, sweep_requests
from evalcore.datasets.names import dataset_label
from evalcore.errors import EvalError
from evalcore.judges import (
    JUDGES,
    Rubric,
    builtin_text,
    custom_prompt,
    local_notes,
    parse_rubric,
    preview_messages,
    prompt_problems,
    rubric_problems,
    rubric_prompt,
    rubric_text,
)
from evalcore.judges.rubrics import READABLE
from evalcore.language.text import counted
from evalcore.store import NotFound, Store
from evalcore.suites import Suite, list_suites
from evalcore.targets import TargetConfig
from evalcore.targets.allowed import SCHEDULERS_SETTING, schedulers
from evalcore.targets.generators import judged_locally
from evalcore.targets.presets import PRESETS, QUICK_START
from evalcore.targets.saved_targets import get_target, save_target
from evalcore.targets.target_config import CHOICES, KEYS, PROMPT_TABLES, RANGES, sweep_values
from ui.text import json_object

NO_SWEEP = "(no sweep)"
EXECUTORS = {"local": "this machine", "dask": "the Dask cluster"}
CAMPAIGN = "campaign:"  # a "start from" option: the configuration of a past campaign
LONG_TEXT = ("_prompt", "_template", "agent_body", "fallback_answer")
ACRONYMS = {"rrf": "RRF", "llm": "LLM", "url": "URL", "http": "HTTP", "api": "API", "id": "id", "hyde": "HyDE",
            "n": "N", "kb": "KB"}


def config_inputs(base: TargetConfig, key: str, disabled: bool) -> dict[str, Any]:
    """One input per TargetConfig field (built from the dataclass), grouped in sections; returns the values."""
    current, defaults = base.to_dict(), TargetConfig().to_dict()
    values: dict[str, Any] = {}
    for number, (group, names) in enumerate(TargetConfig.sections().items()):
        with st.expander(group, expanded=number == 0):
            columns = st.columns(3)
            for position, name in enumerate(n for n in names if n not in PROMPT_TABLES):  # their own sections
                with columns[position % 3]:
                    values[name] = _config_input(name, current[name], defaults[name], f"{key}-{name}", disabled,
                                                 base)
    return values


def _config_input(name: str, value: Any, default: Any, key: str, disabled: bool, base: TargetConfig) -> Any:
    """The widget for one key, chosen by its choices, type and range."""
    shown = f"{default!r}" if not isinstance(default, str) or len(default) < 60 else "see docs/targets.md"
    hint = ui.escape_md(f"key {name} · {KEYS[name].help} · default: {shown}")
    common: dict[str, Any] = {"key": key, "help": hint, "disabled": disabled}
    label = setting_label(name)
    if name in CHOICES:
        return st.selectbox(label, CHOICES[name], index=ui.index_of(list(CHOICES[name]), value),
                            format_func=partial(choice_text, name, base), **common)
    low, high = RANGES.get(name, (None, None))
    if isinstance(default, int) and not isinstance(default, bool):
        return st.number_input(label, value=int(value), step=1, **common,
                               min_value=None if low is None else int(low),
                               max_value=None if high is None else int(high))
    if isinstance(default, float):
        return st.number_input(label, value=float(value), step=0.05, format="%.3f", **common, min_value=low,
                               max_value=high)
    if isinstance(default, dict):
        return st.text_area(label, value=json.dumps(value, ensure_ascii=False),
                            **{**common, "help": f"key {name} · a JSON object"})
    if name.endswith(LONG_TEXT):
        return st.text_area(label, value=value, **common)
    return st.text_input(label, value=value, **common)


def choice_text(name: str, base: TargetConfig, choice: str) -> str:
    """An option as offered, with why it cannot work with the starting configuration (a query transformation is
    written by the generator's chat model, which the extractive generator does not have)."""
    if name == "query_transform" and choice != "none" and base.generation.generator == "extractive":
        return f"{choice} (needs generator openai or local, not extractive)"
    return str(choice)


def setting_label(name: str) -> str:
    """A configuration key as a form label: `knowledge_base` → "Knowledge base", `rrf_k` → "RRF k" (the key itself
    is in the help)."""
    if name == "top_k":  # the generator's sampling, not to be taken for the chunks retrieved (embedding_top_k)
        return "Sampling top-k"
    words = [ACRONYMS.get(word, word) for word in name.replace("top_k", "top-k").split("_")]
    text = " ".join(words)
    return text[0].upper() + text[1:]


def form_values(values: dict[str, Any]) -> dict[str, Any]:
    """The form's values with its table keys (JSON text) read as objects; EvalError names a bad one."""
    tables = {name for name, value in TargetConfig().to_dict().items() if isinstance(value, dict)}
    return {name: json_object(name, value) if isinstance(value, str) and name in tables else value
            for name, value in values.items()}


def judge_prompt_inputs(base: TargetConfig, key: str, disabled: bool,
                        sample: tuple[str, list[str]] | None) -> dict[str, str]:
    """The campaign's own judge prompts: each starts from the built-in text, is checked as it is typed, and
    previewed on the first question."""
    current = dict(base.judge.judge_prompts)
    with st.expander(f"Judge prompts ({len(current)} replaced)" if current else "Judge prompts"):
        picked = st.multiselect("Replace the prompt of", JUDGES, default=list(current), key=f"{key}-judge_prompts",
                                disabled=disabled, help="The text and its hash are stored with the campaign and enter "
                                "the judge's signature: campaigns judged with different prompts are flagged as not "
                                "comparable on that judge.")
        prompts = {}
        for name in picked:
            prompts[name] = st.text_area(f"Prompt of the {name} judge", value=current.get(name) or builtin_text(name),
                                         height=300, key=f"prompt-{key}-{name}", disabled=disabled)
            show_prompt_check(name, prompts[name], sample)
    return prompts


def show_prompt_check(name: str, text: str, sample: tuple[str, list[str]] | None) -> None:
    """The problems of a prompt, else its messages on the first question."""
    problems = prompt_problems(name, text)
    if problems:
        st.warning(ui.escape_md(f"{name}: " + "; ".join(problems)))
        return
    if sample is not None:
        prompt = custom_prompt(name, text, where=f"judge_prompts.{name}")
        messages = preview_messages(prompt, question=sample[0], references=sample[1])
        st.caption(f"The {name} judge's prompt on the first question")
        st.code("\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages), language=None, wrap_lines=True)


def rubric_inputs(base: TargetConfig, key: str, disabled: bool, sample: tuple[str, list[str]] | None) -> dict[str, str]:
    """Judges defined in plain words: a small form each, checked as it is filled and previewed on the first question."""
    current = list(base.judge.rubrics)
    with st.expander(f"Rubric judges ({len(current)})" if current else "Rubric judges"):
        count = st.number_input("How many rubric judges", min_value=0, max_value=5, value=len(current),
                                key=f"{key}-rubrics", disabled=disabled,
                                help="key rubrics · each is a judge of the campaign, a measure like any other "
                                     "(judge.NAME)")
        rubrics = {}
        for index in range(int(count)):
            name, text = current[index] if index < len(current) else (f"rubric_{index + 1}", "")
            st.divider()
            name, text = rubric_input(name, text, f"rubric-{key}-{index}", disabled)
            rubrics[name] = text
            show_rubric_check(name, text, sample)
    return rubrics


def rubric_input(name: str, text: str, key: str, disabled: bool) -> tuple[str, str]:
    """One rubric's fields (name, scale, pass mark, inputs, criteria, steps), prefilled from its text."""
    try:
        start = parse_rubric(name, text)
    except EvalError:
        start = Rubric(name, "", "", tuple("12345"), "3", ("question", "answer"))
    left, middle, right = st.columns(3)
    name = left.text_input("Name", value=start.name, key=f"{key}-name", disabled=disabled)
    likert = middle.radio("Scale", ["1-5", "labels"], index=0 if start.likert else 1, key=f"{key}-scale",
                          horizontal=True, disabled=disabled) == "1-5"
    labels = tuple("12345") if likert else tuple(
        label.strip().lower() for label in right.text_input(
            "Labels, worst to best", value="" if start.likert else ", ".join(start.labels), key=f"{key}-labels",
            placeholder="wrong, partial, right", disabled=disabled).split(",") if label.strip())
    options = list(labels) or [""]
    pass_label = left.selectbox("Passes from", options, index=ui.index_of(options, start.pass_label),
                                key=f"{key}-pass", disabled=disabled)
    reads = middle.multiselect("Reads", list(READABLE), default=list(start.reads), key=f"{key}-reads",
                               disabled=disabled)
    criteria = st.text_area("Criteria, in plain words", value=start.criteria, key=f"{key}-criteria", disabled=disabled)
    steps = st.text_area("Evaluation steps (optional)", value=start.steps, key=f"{key}-steps", disabled=disabled)
    return name, rubric_text(Rubric(name, criteria, steps, labels, pass_label or "", tuple(reads)))


def show_rubric_check(name: str, text: str, sample: tuple[str, list[str]] | None) -> None:
    """The problems of a rubric, else the prompt it makes, filled in with the first question."""
    problems = rubric_problems(name, text)
    if problems:
        st.warning(ui.escape_md("; ".join(problems)))
    elif sample is not None:
        messages = preview_messages(rubric_prompt(parse_rubric(name, text)), question=sample[0], references=sample[1])
        st.caption(f"The {name} judge's prompt on the first question")
        st.code("\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages), language=None, wrap_lines=True)


def first_question(dataset: str | None, suite: Suite | None) -> tuple[str, list[str]] | None:
    """The first question of the chosen dataset or suite and its reference answers, for the prompt previews."""
    if suite is not None:
        case = suite.cases[0] if suite.cases else None
        return (case.question, [case.expected_answer] if case.expected_answer else []) if case else None
    if dataset is None:
        return None
    questions = ui.open_dataset(dataset)[0].questions
    return (questions[0].text, list(questions[0].references)) if questions else None


def execution_inputs(base: TargetConfig, key: str, configurable: bool) -> dict[str, str]:
    """Where the questions are answered: a Dask cluster is offered once the operator set a scheduler, and a
    full-access session picks one of the operator's schedulers (never an address typed here)."""
    listed = operator_schedulers()
    offered = list(listed) if configurable else []
    left, right = st.columns(2)
    # A past campaign's scheduler that the operator does not list is dropped (the server's default instead).
    current = next((name for name, address in listed.items() if base.execution.scheduler in (name, address)), None)
    scheduler = current or ""
    if offered:
        scheduler = left.selectbox("Dask scheduler", offered, index=ui.index_of(offered, current),
                                   key=f"{key}-scheduler", help=f"The schedulers the server's operator lists "
                                   f"({SCHEDULERS_SETTING}; `default` is EVALCORE_DASK_SCHEDULER).")
    choices = ["local", "dask"] if offered or "default" in listed or base.execution.executor == "dask" else ["local"]
    executor = right.selectbox("Answer the questions on", choices, index=ui.index_of(choices, base.execution.executor),
                               key=f"{key}-executor", format_func=EXECUTORS.__getitem__,
                               help="The results are the same; a cluster spreads the work over its workers.")
    return {"executor": executor or "local", "scheduler": scheduler or ""}


def operator_schedulers() -> dict[str, str]:
    """The operator's Dask schedulers by name; none (and the setting's problem shown) when it is malformed."""
    try:
        return schedulers()
    except EvalError as error:
        ui.show_error(error)
        return {}


def past_configurations(store: Store, principal: Principal, dataset: str | None, suite: Suite | None) -> dict[str, str]:
    """The configurations of past campaigns, those on the chosen dataset or suite first, each group newest first."""
    rows = ui.rows_of(list_campaigns(store, principal=principal), principal)
    here = [r for r in rows if (r.campaign.suite_id == suite.id if suite else
                                r.campaign.kind == "dataset" and r.source_name == dataset_label(str(dataset)))]
    others = sorted((r for r in rows if r not in here), key=lambda r: (r.campaign.kind, r.source_name.casefold()))
    return {f"{CAMPAIGN}{r.campaign.id}": f"campaign on {r.campaign.kind} {r.source_name}: {r.campaign.name} · "
            f"{ui.fmt_when(r.campaign.created_at)}" for r in [*here, *others]}


def start_config(store: Store, principal: Principal, base: str) -> TargetConfig:
    """The configuration the form starts from: a preset, a saved configuration or a past campaign's."""
    if base in PRESETS:
        return PRESETS[base].config
    if base.startswith(CAMPAIGN):
        return TargetConfig.from_dict(get_campaign(store, base.removeprefix(CAMPAIGN), principal=principal).config)
    return get_target(store, base, principal=principal)


principal = ui.page("Run a campaign", needs=Action.CHANGE)
# Changing configuration keys decides which URLs and files the server uses: full-access keys only
# (the API's rule for saving a target); other admins run presets and saved configurations as they are.
configurable = principal.can(Action.CONFIGURE)
st.caption("Press Launch: the quick start runs the built-in sample dataset with keyword retrieval and extractive "
           "answers, no model needed. Vector and hybrid retrieval embed the corpus first (about half a minute for "
           "the sample, then cached).")
store = ui.store()
ui.open_on("run-origin", "questions", ["dataset", "suite"])
origin = st.radio("Questions from", ["dataset", "suite"], horizontal=True, key="run-origin")
dataset, suite = None, None
if origin == "dataset":
    datasets = ui.list_datasets()
    ui.open_on("dataset_ref", "dataset", datasets)  # a link's dataset (else the one picked on Datasets)
    dataset = st.selectbox("Dataset", datasets, index=ui.index_of(datasets, st.session_state.get("dataset_ref")))
    ui.keep(questions=origin, dataset=dataset, suite=None)
else:
    suites = list_suites(store, principal=principal)
    if not suites:
        st.info("No suite yet.")
        st.page_link("pages/suites.py", label="Create or import a suite")
        st.stop()
    # Grouped by the dataset their configuration's knowledge base is, then by name.
    frame = ui.suite_frame(suites, principal).sort_values(["dataset", "name"], key=lambda c: c.str.casefold())
    by_id = {s.id: s for s in suites}
    ui.open_on("suite_id", "suite", list(by_id))
    suite = by_id[ui.table_picker("Suite", frame, {i: f"{by_id[i].name} · {len(by_id[i].cases)} cases · {i}"
                                                   for i in frame["id"]}, "suite_id", key="run-suites")]
    ui.keep(questions=origin, suite=suite.id, dataset=None)

starts = {QUICK_START.name: QUICK_START.label, **ui.target_choices(store, principal),
          **past_configurations(store, principal, dataset, suite)}
preferred = suite.target_id if suite else QUICK_START.name
start_ids = list(starts)
base = st.selectbox("Start from", start_ids, format_func=lambda i: starts[i], index=ui.index_of(start_ids, preferred),
                    help="A starting point: a preset, a saved configuration, or the configuration of a past campaign "
                         "(those on these questions first); every key can be changed below.") or QUICK_START.name
base_config = TargetConfig()
with ui.guard():
    base_config = start_config(store, principal, base)
if not configurable:
    st.caption("This key runs presets and saved configurations as they are: changing keys, saving and sweeping "
               "need a key with the full-access capability.")

execution = execution_inputs(base_config, key=f"cfg-{base}", configurable=configurable)
prompts, rubrics = {}, {}
with ui.guard():
    sample = first_question(dataset, suite)
    prompts = judge_prompt_inputs(base_config, f"cfg-{base}", not configurable, sample)
    rubrics = rubric_inputs(base_config, f"cfg-{base}", not configurable, sample)
with st.form("launch"):
    name = st.text_input("Campaign name", max_chars=200, key="campaign-name",
                         placeholder=f"made from its settings, e.g. {base_config.describe()}",
                         help="A name to recognise it by in lists and pickers; renamed later on the Campaigns page. "
                              "A sweep adds each value: '<name> · key=value'.")
    values = config_inputs(base_config, key=f"cfg-{base}", disabled=not configurable)
    left, middle, right = st.columns(3)
    use_judge = left.checkbox("AI score 1-5 (judge.score)",
                              help="Asks the model of the Judge section when one is named there (judge_model), "
                                   "else the target's own chat model: an HTTP agent or the extractive generator "
                                   "needs one there.")
    judges = left.multiselect("Other judges", [j for j in JUDGES if j != "score"])
    concurrency = middle.number_input("Concurrency (0 = automatic)", min_value=0, max_value=256, value=0,
                                      help="Automatic: 1 for a suite (its response times then mean something), "
                                           "cores - 1 for local work, 8 for remote models.")
    max_failed = middle.number_input("Stop when more than this share failed", min_value=0.0, max_value=1.0,
                                     value=0.5, step=0.05, help="1 = never stop; a campaign that ends with failed "
                                     "questions shows as 'succeeded with N failed'.")
    limit = middle.number_input("Only the first N questions (0 = all)", min_value=0, value=0, key="limit")
    cache = right.checkbox("Cache model calls", value=True)
    judge_samples = right.number_input("Ask each judge N times", min_value=1, max_value=20, value=1,
                                       help="Above 1, judges answer at temperature 0.7 and the spread is recorded.")
    budget = right.number_input("Budget: stop at this cost (0 = none)", min_value=0.0,
                                value=float(base_config.execution.max_cost), step=0.5, key=f"cfg-{base}-max_cost",
                                help="key max_cost · In the currency of the prices (the Campaigns page shows what each "
                                     "campaign cost). The campaign stops between questions once its model calls cost "
                                     "this much (status over_budget); resumed, it goes on.")
    save_as = right.text_input("Save the configuration as", placeholder="optional name", disabled=not configurable,
                               help="Saved before launching (the first value of a sweep); suites can then target it.")
    sweep_key = left.selectbox("Sweep one key", [NO_SWEEP, *TargetConfig().to_dict()], key="sweep_key",
                               disabled=not configurable)
    sweep_text = middle.text_input("Sweep values (comma-separated)", placeholder="e.g. bm25, vector, hybrid",
                                   key="sweep_values", disabled=not configurable)
    submitted = st.form_submit_button("Launch", type="primary")
    estimating = st.form_submit_button("Estimate the cost", help="What the campaign would cost, before it runs: "
                                       "from this configuration's earlier campaigns (with the same judges), else "
                                       "by counting the prompts of a sample of its questions (a rough order of "
                                       "magnitude).")

if submitted or estimating:
    with ui.guard():
        swept = None if sweep_key == NO_SWEEP else sweep_key
        own_judges = {"judge_prompts": prompts, "rubrics": rubrics}
        config = TargetConfig.from_dict(form_values(values | execution | own_judges))
        config = config.with_values(max_cost=float(budget))
        start = None if base in PRESETS or base.startswith(CAMPAIGN) else base
        request = LaunchRequest(dataset=dataset, suite_id=suite.id if suite else None, config=config,
                                target_id=linked_target(start, base_config, [config]), use_judge=use_judge,
                                judges=tuple(judges), concurrency=concurrency or None, cache=cache,
                                limit=limit or None, judge_samples=int(judge_samples),
                                max_failed_share=float(max_failed), name=name.strip() or None, principal=principal)
        requests = (sweep_requests(request, swept, sweep_values(sweep_text), one_after_another=False) if swept
                    else [request])
        if estimating:
            for each in requests:
                st.info(ui.escape_md(ui.manager().estimate(each).text()))
            st.stop()
        if save_as.strip():  # the first value of a sweep is the one saved, and its campaign stays linked to it
            saved = save_target(store, requests[0].config or config, name=save_as.strip(), principal=principal)
            requests[0] = replace(requests[0], target_id=saved)
        if (use_judge or judges or config.judge.rubrics) and judged_locally(config):
            for note in local_notes(judges):  # before launching: said even when the launch is refused
                st.warning(note)
        # Launching checks the questions and the settings first; the worker that claims the campaign checks its
        # target (models reachable, weights loaded) and fails it with the reason. Say what happens at once.
        with st.status(f"Launching {counted(len(requests), 'campaign')}…", expanded=True) as launching:
            for number, each in enumerate(requests, start=1):
                label = each.name or (each.config or config).describe()
                launching.write(ui.escape_md(f"{number} of {len(requests)}: {label} · "
                                             "preparing: loading the questions, checking the settings…"))
                campaign_id = ui.manager().launch(each)
                launching.write(ui.escape_md(f"{number} of {len(requests)}: queued as {campaign_id}"))
                st.session_state["launched"] = [campaign_id, *st.session_state.get("launched", [])]
                ui.select_next_run("campaign_id", campaign_id)
            launching.update(label=f"Launched {counted(len(requests), 'campaign')}: their progress is below",
                             state="complete",
                             expanded=False)


def launched(store: Store, principal: Principal) -> list[Campaign]:
    """The campaigns launched from this session (the last ten), as stored now."""
    campaigns = []
    for campaign_id in st.session_state.get("launched", [])[:10]:
        try:
            campaigns.append(get_campaign(store, campaign_id, principal=principal))
        except NotFound:  # deleted meanwhile
            pass
    return campaigns


def show_launched(store: Store, principal: Principal) -> None:
    """Their progress bars and errors."""
    for campaign in launched(store, principal):
        ui.show_progress(campaign)
        if campaign.error:
            st.text(campaign.error)


current = launched(store, principal)
if current:
    st.subheader("Launched from here", anchor=False)
    # Poll the store only while one of them runs; the workers never touch Streamlit.
    ui.poll(partial(show_launched, store, principal), 2 if any(c.active for c in current) else None)
    st.page_link("pages/campaigns.py", label="Open the results")
    if len(current) > 1:
        st.page_link("pages/compare.py", label="Compare them")
