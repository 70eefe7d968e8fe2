"""How a campaign runs, as the API's run bodies give it: judges, their model and pass marks, pacing, a name."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from evalcore.access import Principal
from evalcore.api.errors import ApiError
from evalcore.api.inputs import RequestBody
from evalcore.campaigns import CampaignManager
from evalcore.judges import JUDGES
from evalcore.targets import TargetConfig

PROMPT_CHARS = 50_000  # a judge prompt far longer than any instructions a judge needs


class JudgeModelIn(RequestBody):
    """The judges' model; left out, judges ask the target's own chat model (an agent or a file need one here)."""

    kind: str = Field(default="auto", pattern="^(auto|openai|local)$",
                      description="auto: the target's model when it has one, else this one; openai or local: this one")
    base_url: str = Field(default="", max_length=2000, description="OpenAI-compatible endpoint (default: the target's)")
    model: str = Field(default="", max_length=200)
    api_key_env: str = Field(default="OPENAI_API_KEY", max_length=200,
                             description="the NAME of the server's environment variable holding the key")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=300, ge=16, le=131072)


class RunSettings(RequestBody):
    """Options every campaign launch accepts."""

    use_judge: bool = Field(default=False, description="add the 1-5 AI score (judge `score`)")
    judges: list[str] = Field(default_factory=list, max_length=len(JUDGES),
                              description=f"judges to run: {', '.join(JUDGES)} (rubrics run without being named)")
    judge_samples: int = Field(default=1, ge=1, le=20, description="ask each judge N times and record the spread")
    judge: JudgeModelIn | None = Field(default=None, description="the judges' model (needs a full-access key)")
    judge_thresholds: dict[str, float] = Field(default_factory=dict, description="pass mark per judge on 1-5")
    judge_prompts: dict[str, Annotated[str, Field(max_length=PROMPT_CHARS)]] = Field(
        default_factory=dict, max_length=len(JUDGES),
        description="a judge's own prompt for this campaign: judge name -> the prompt's text, in the shape of the "
                    "built-in ones ([system] and [user] lines; the placeholders the judge reads); its hash enters "
                    "the judge's signature")
    rubrics: dict[str, Annotated[str, Field(max_length=PROMPT_CHARS)]] = Field(
        default_factory=dict, max_length=20,
        description="judges defined in plain words: name -> the rubric's text (# output: 1-5 or labels worst to best, "
                    "# pass:, # reads:, then [criteria] and optional [steps]); each is a judge of the campaign")
    concurrency: int | None = Field(default=None, ge=1, le=256,
                                    description="questions in flight (suites: 1 by default, so times are meaningful)")
    time_limit: float | None = Field(default=None, gt=0, le=86400, allow_inf_nan=False,
                                     description="seconds per question (default 240)")
    max_failed_share: float | None = Field(default=None, ge=0, le=1,
                                           description="stop once more than this share failed (default 0.5; 1 = never)")
    name: str | None = Field(default=None, min_length=1, max_length=200, description="a name to recognise it by")
    executor: Literal["local", "dask"] | None = Field(
        default=None, description="where the questions are answered: local (the server's threads) or dask (the "
                                  "workers of a Dask cluster); default: the configuration's executor, else local")
    scheduler: str | None = Field(default=None, max_length=300, pattern=r"^tcp://\S+:[0-9]{1,5}$",
                                  description="the Dask scheduler, tcp://HOST:PORT (needs a full-access key); "
                                              "default: the configuration's, else the server's EVALCORE_DASK_SCHEDULER")


def configured(config: TargetConfig, body: RunSettings, principal: Principal) -> TargetConfig:
    """The configuration with the body's judge settings and where it runs; a judge model or a scheduler needs
    full-access (each names a host the server connects to)."""
    if body.scheduler is not None and principal.capability != "full-access":
        raise ApiError(403, "scheduler: choosing the Dask scheduler needs a key with the full-access capability")
    config = config.run_on(body.executor, body.scheduler)
    overrides: dict[str, Any] = {}
    if body.judge is not None:
        if principal.capability != "full-access":
            raise ApiError(403, "judge: choosing the judges' model needs a key with the full-access capability")
        overrides |= {f"judge_{name}": value for name, value in body.judge.model_dump().items()}
    if body.judge_thresholds:
        overrides["judge_thresholds"] = {**dict(config.judge_thresholds), **body.judge_thresholds}
    for key in ("judge_prompts", "rubrics"):
        if given := getattr(body, key):
            overrides[key] = {**dict(getattr(config, key)), **given}
    return TargetConfig.from_dict({**config.to_dict(), **overrides}) if overrides else config


def launch(manager: CampaignManager, body: RunSettings, **where: Any) -> str:
    """Launch with the body's options (`where`: dataset or suite, config, target, tenant, campaign id)."""
    return manager.launch(use_judge=body.use_judge, judges=tuple(body.judges), judge_samples=body.judge_samples,
                          concurrency=body.concurrency, time_limit=body.time_limit,
                          max_failed_share=body.max_failed_share, name=body.name, **where)
