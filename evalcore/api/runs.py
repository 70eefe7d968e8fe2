"""How a campaign runs, as the API's run bodies give it: judges, their model and pass marks, pacing, a name."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import Field

from evalcore.access.principals import Action, Principal
from evalcore.api.error_envelope import ApiError
from evalcore.api.inputs import RequestBody
from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.records import DEFAULT_MAX_FAILED_SHARE, DEFAULT_TIME_LIMIT_S, RUN_BOUNDS
from evalcore.judges import JUDGES
from evalcore.judges.scale import HIGHEST, LOWEST
from evalcore.targets import TargetConfig
from evalcore.targets.target_config import KEYS, TABLES


def key_field(name: str, **limits: Any) -> Any:
    """A request field for a configuration key: its default, bounds, choices and help as the key declares them."""
    key = KEYS[name]
    if key.within is not None:
        limits |= {"ge": key.within[0], "le": key.within[1]}
    if key.choices:
        limits["pattern"] = f"^({'|'.join(key.choices)})$"
    field: Any = Field  # its overloads cannot be chosen from a dict of limits
    return field(default=key.default, description=key.help, **limits)


def bounded(name: str, description: str) -> Any:
    """An optional run option with the engine's bounds (RUN_BOUNDS)."""
    low, high = RUN_BOUNDS[name]
    lower = {"gt": low} if name == "time_limit" else {"ge": low}
    field: Any = Field
    return field(default=None, le=high, allow_inf_nan=False, description=description, **lower)

PROMPT_CHARS = 50_000  # a judge prompt far longer than any instructions a judge needs


class JudgeModelIn(RequestBody):
    """The judges' model; left out, judges ask the target's own chat model (an agent or a file need one here)."""

    kind: str = key_field("judge_kind")
    base_url: str = key_field("judge_base_url", max_length=2000)
    model: str = key_field("judge_model", max_length=200)
    api_key_env: str = key_field("judge_api_key_env", max_length=200)
    deployment: str = key_field("judge_deployment", max_length=200)
    api_version: str = key_field("judge_api_version", max_length=100)
    api_key_header: str = key_field("judge_api_key_header")
    temperature: float = key_field("judge_temperature")
    max_tokens: int = key_field("judge_max_tokens")
    structured_output: str = key_field("judge_structured_output")


class JudgingIn(RequestBody):
    """Which judges, on which model, with which pass marks, prompts and rubrics (a launch's, a re-judge's)."""

    judges: list[str] = Field(default_factory=list, max_length=len(JUDGES),
                              description=f"judges to run: {', '.join(JUDGES)} (rubrics run without being named; a "
                                          "re-judge may name them, and without any runs the campaign's judges)")
    judge: JudgeModelIn | None = Field(default=None, description="the judges' model (needs a full-access key)")
    judge_thresholds: dict[str, float] = Field(default_factory=dict,
                                               description=f"pass mark per judge on {LOWEST}-{HIGHEST} (claims: a "
                                               "share of supported claims, 0-1, default 1)")
    judge_prompts: dict[str, Annotated[str, Field(max_length=PROMPT_CHARS)]] = Field(
        default_factory=dict, max_length=len(JUDGES),
        description="a judge's own prompt for this campaign: judge name -> the prompt's text, in the shape of the "
                    "built-in ones ([system] and [user] lines; the placeholders the judge reads); its hash enters "
                    "the judge's signature")
    rubrics: dict[str, Annotated[str, Field(max_length=PROMPT_CHARS)]] = Field(
        default_factory=dict, max_length=20,
        description="judges defined in plain words: name -> the rubric's text (# output: 1-5 or labels worst to best, "
                    "# pass:, # reads:, then [criteria] and optional [steps]); each is a judge of the campaign")


class RunSettings(JudgingIn):
    """Options every campaign launch accepts."""

    use_judge: bool = Field(default=False, description=f"add the {LOWEST}-{HIGHEST} AI score (judge `score`)")
    judge_samples: int = Field(default=1, ge=RUN_BOUNDS["judge_samples"][0], le=RUN_BOUNDS["judge_samples"][1],
                               description="ask each judge N times and record the spread")
    graded_thresholds: dict[str, float] = Field(
        default_factory=dict, description="graded document retrieval pass marks by the evaluator's names "
        "(ndcg_threshold, xdcg_threshold, fidelity_threshold, top1_relevance_threshold, ...) or the measure's")
    concurrency: int | None = bounded("concurrency", "questions in flight (suites: 1 by default, so times are "
                                                     "meaningful)")
    time_limit: float | None = bounded("time_limit", f"seconds per question (default {DEFAULT_TIME_LIMIT_S:g})")
    max_failed_share: float | None = bounded("max_failed_share", "stop once more than this share failed (default "
                                                                 f"{DEFAULT_MAX_FAILED_SHARE:g}; 1 = never)")
    name: str | None = Field(default=None, min_length=1, max_length=200, description="a name to recognise it by")
    max_cost: float | None = Field(default=None, ge=0, le=1e9, description=(
        "stop between questions once the campaign's model calls cost this much, in the prices' currency (status "
        "over_budget); sets the configuration's max_cost"))
    executor: Literal["local", "dask"] | None = Field(
        default=None, description="where the questions are answered: local (the server's threads) or dask (the "
                                  "workers of a Dask cluster); default: the configuration's executor, else local")
    scheduler: str | None = Field(default=None, max_length=300, pattern=r"^(tcp://\S+:[0-9]{1,5}|[A-Za-z][A-Za-z0-9._-]{0,63})$",
                                  description="the Dask scheduler: the name or address (tcp://HOST:PORT) of one the "
                                              "server's operator lists in EVALCORE_DASK_SCHEDULERS (needs a "
                                              "full-access key); default: the configuration's, else the server's "
                                              "EVALCORE_DASK_SCHEDULER")


def configured(config: TargetConfig, body: RunSettings, principal: Principal) -> TargetConfig:
    """The configuration with the body's judge settings and where it runs; a judge model or a scheduler needs
    full-access (each names a host the server connects to)."""
    if body.scheduler is not None and not principal.can(Action.CONFIGURE):
        raise ApiError(403, "scheduler: choosing the Dask scheduler needs a key with the full-access capability")
    config = config.run_on(body.executor, body.scheduler)
    overrides = judge_settings(body, principal) | ({"graded_thresholds": body.graded_thresholds}
                                                    if body.graded_thresholds else {}) \
        | ({"max_cost": body.max_cost} if body.max_cost is not None else {})
    for table in set(overrides) & set(TABLES):  # their entries add to the configuration's
        overrides[table] = {**dict(config.value(table)), **overrides[table]}
    return TargetConfig.from_dict({**config.to_dict(), **overrides}) if overrides else config


def judge_settings(body: JudgingIn, principal: Principal) -> dict[str, Any]:
    """The judge keys the body gives; a judge model needs full-access (it names a host the server connects to)."""
    settings: dict[str, Any] = {}
    if body.judge is not None:
        if not principal.can(Action.CONFIGURE):
            raise ApiError(403, "judge: choosing the judges' model needs a key with the full-access capability")
        settings |= {f"judge_{name}": value for name, value in body.judge.model_dump().items()}
    return settings | {table: dict(given) for table in ("judge_thresholds", "judge_prompts", "rubrics")
                       if (given := getattr(body, table))}


def launch(manager: CampaignManager, body: RunSettings, where: LaunchRequest) -> str:
    """Launch with the body's options (`where`: dataset or suite, config, target, principal, campaign id)."""
    return manager.launch(request_of(body, where))


def request_of(body: RunSettings, where: LaunchRequest) -> LaunchRequest:
    """The launch the body asks for (`where`: dataset or suite, config, target, principal, campaign id)."""
    return replace(where, use_judge=body.use_judge, judges=tuple(body.judges), judge_samples=body.judge_samples,
                   concurrency=body.concurrency, time_limit=body.time_limit,
                   max_failed_share=body.max_failed_share, name=body.name)
