"""What a launch asks for (one typed request every face builds), the configuration and judges it runs with, and the
rules of a sweep's launches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.access.principals import Principal
from evalcore.errors import EvalError
from evalcore.store import Store
from evalcore.suites import Suite
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import get_target

if TYPE_CHECKING:
    from evalcore.targets.base import Target
    from evalcore.telemetry import TraceSample


@dataclass(frozen=True)
class LaunchRequest:
    """One campaign to launch: its questions (a dataset, a suite or traces), what answers them, and how it runs."""

    dataset: str | None = None  # a dataset id or folder; or
    suite_id: str | None = None  # a suite (its cases are the questions); or
    traces: TraceSample | None = None  # a sample of production traces (their answers are judged; nothing is asked)
    # What answers them (default: the saved target, else the suite's, else the defaults).
    config: TargetConfig | None = None
    # The saved configuration it is, kept as a link (an evaluation task's knowledge_base_id).
    target_id: str | None = None
    tenant: str = "default"  # the workspace owning it, when no principal says so
    use_judge: bool = False  # add the AI score (judge `score`)
    judges: tuple[str, ...] = ()  # other judges to run on each answer
    concurrency: int | None = None  # questions in flight (None: automatic)
    cache: bool = True  # reuse cached model replies
    campaign_id: str | None = None  # an id chosen by the caller (an evaluation task's), else a new one
    time_limit: float | None = None  # seconds per question (None: the default)
    max_failed_share: float | None = None  # stop once more than this share failed (None: the default)
    limit: int | None = None  # run only the first N questions
    target: Target | None = None  # a ready-made target object (its config is the snapshot) instead of building one
    judge_samples: int = 1  # each judge asked this many times
    name: str | None = None  # a name to recognise it by (None: made from the configuration)
    dataset_root: Path | None = None  # where dataset ids are found, when not the project's dataset/ (the API's)
    principal: Principal | None = None  # who launches (None: the local operator)
    # Per role, which model the configuration got and why (an evaluation task's).
    models: Mapping[str, str] | None = None


def sweep_name(name: str | None, config: TargetConfig, key: str, value: object) -> str:
    """The name of one campaign of a sweep: the name given and the value it tries; without one, the configuration's
    as a single campaign's (`bm25 · top 3 · extractive`), or without the swept key when that name does not say it,
    and the value it tries."""
    if not (name or "").strip() and key == "embedding_top_k":
        return config.describe(top_k=True)
    default = type(config).from_dict({**config.to_dict(), key: type(config)().to_dict()[key]})
    return f"{(name or '').strip() or default.describe()} · {key}={value}"


def sweep_requests(request: LaunchRequest, key: str, values: Sequence[Any], *,
                   one_after_another: bool) -> list[LaunchRequest]:
    """One request per value of `key`, each named after its value; EvalError for a sweep that cannot run.

    A suite's campaigns cannot run side by side (their response times would mean nothing): a suite is swept
    only by a caller that waits for each campaign before launching the next (`one_after_another`).
    """
    if request.suite_id is not None and not one_after_another:
        raise EvalError("a suite runs one campaign at a time, and these would be launched together", where="sweep",
                        fix="sweep from the command line (run --suite ID --sweep KEY=V1,V2), which runs them one "
                            "after another, or sweep over a dataset")
    config = request.config or TargetConfig()
    return [replace(request, config=each, target_id=None, name=sweep_name(request.name, each, key, value))
            for value, each in zip(values, config.sweep(key, values), strict=True)]


def linked_target(start: str | None, start_config: TargetConfig, configs: Sequence[TargetConfig]) -> str | None:
    """The saved configuration a launch stays linked to: the one it started from (`start`, a saved id, or None for
    a preset or a past campaign), when every configuration launched is still that one (where it runs aside)."""
    if start is None:
        return None
    return start if [c.config_hash() for c in configs] == [start_config.config_hash()] else None


def resolve_config(store: Store, config: TargetConfig | None, target_id: str | None, suite: Suite | None,
                   tenant: str | None) -> tuple[TargetConfig, str | None]:
    """The configuration to run and the saved target it came from, if any: the one given, else the saved target
    (`target_id`, else the suite's), else the defaults."""
    if config is not None:
        return config, target_id
    target_id = target_id or (suite.target_id if suite is not None else None)
    if target_id in (None, "", "default"):
        return TargetConfig(), None
    return get_target(store, target_id, tenant), target_id


def check_judges(judges: tuple[str, ...], rubrics: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Known judge names (aliases resolved; the configuration's rubrics), without duplicates, in the given order."""
    from evalcore.judges import ALIASES, JUDGES

    names = [ALIASES.get(name, name) for name in judges]
    unknown = [name for name in names if name not in JUDGES and name not in rubrics]
    if unknown:
        raise EvalError(f"unknown judge {unknown[0]!r}", where="judges", expected=", ".join(JUDGES + rubrics),
                        fix="define it as a rubric in the configuration ([rubrics])")
    return tuple(dict.fromkeys(names))


def check_settings(config: TargetConfig, judges: tuple[str, ...], cache_dir: Path | None = None) -> None:
    """Refuse what cannot work without connecting anywhere or loading weights (quick): the target's settings, a
    model for the judges, the embedding models installed. A launch that queues its campaign makes these checks
    before it stores anything; the worker that claims it makes the slow ones (endpoints answer, weights load)."""
    from evalcore.targets import RagTarget, build_target
    from evalcore.targets.generators import build_judge_model
    from evalcore.targets.knowledge import require_embedder

    target = build_target(config, cache_dir=cache_dir)
    if judges:
        build_judge_model(config, target.chat_model(), check=False)
    models = target.embedding_models() if isinstance(target, RagTarget) else ()
    similarity = (config.judge.answer_similarity_model,) if config.judge.answer_similarity_model != "none" else ()
    for model in (*models, *similarity):
        require_embedder(model)
