"""What only the server's operator decides: the Dask schedulers a campaign may run on and the environment
variables a configuration may send to a model or an agent.

A configuration names both (`scheduler`, `api_key_env`, `${VAR}` in `agent_headers` …). Connecting to a
Dask scheduler unpickles what it sends, and a variable's value goes to a URL the configuration chose, so a
request (an API key, a dashboard session) may only pick from the operator's lists; the command line acts
as the operator and keeps its freedom.
"""

from __future__ import annotations

import os
import re

from evalcore.access.principals import Forbidden
from evalcore.errors import EvalError
from evalcore.targets.target_config import SCHEDULER_ADDRESS, TargetConfig

SCHEDULERS_SETTING = "EVALCORE_DASK_SCHEDULERS"
ENV_SETTING = "EVALCORE_ALLOWED_ENV"
# The variables the documentation names for model keys: a request may always name these.
KEY_VARIABLES = frozenset({"OPENAI_API_KEY"})
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
ENV_KEYS = ("api_key_env", "judge_api_key_env", "rerank_api_key_env")


def _entries(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def schedulers() -> dict[str, str]:
    """The operator's Dask schedulers by name: EVALCORE_DASK_SCHEDULERS (`NAME=tcp://HOST:PORT` or a bare
    address, named by itself), then EVALCORE_DASK_SCHEDULER as `default`; EvalError for a malformed entry."""
    listed: dict[str, str] = {}
    for entry in _entries(os.environ.get("EVALCORE_DASK_SCHEDULERS", "")):
        name, sep, address = entry.partition("=")
        name, address = (name.strip(), address.strip()) if sep else (entry, entry)
        if SCHEDULER_ADDRESS.fullmatch(address) is None or not name:
            raise EvalError("a Dask scheduler entry is malformed", where=SCHEDULERS_SETTING, found=entry,
                            expected="NAME=tcp://HOST:PORT or tcp://HOST:PORT, separated by commas")
        listed[name] = address
    default = os.environ.get("EVALCORE_DASK_SCHEDULER", "").strip()
    if default and "default" not in listed:
        listed["default"] = default
    return listed


def scheduler_choice(choice: str) -> str:
    """The address a scheduler name stands for (an address stands for itself); a name not listed is an error."""
    if choice.startswith("tcp://"):
        return choice
    listed = schedulers()
    if choice not in listed:
        raise EvalError(f"no Dask scheduler is named {choice!r}", where="scheduler",
                        expected=f"one of {', '.join(listed) or 'none (no scheduler is set)'}",
                        fix=f"name one listed in {SCHEDULERS_SETTING}, or give its address tcp://HOST:PORT")
    return listed[choice]


def allowed_env() -> frozenset[str]:
    """The environment variables a request may name: the documented model keys and EVALCORE_ALLOWED_ENV."""
    return KEY_VARIABLES | frozenset(_entries(os.environ.get("EVALCORE_ALLOWED_ENV", "")))


def env_names(config: TargetConfig) -> list[tuple[str, str]]:
    """Every environment variable the configuration sends somewhere, as (key, variable)."""
    named = [(key, config.value(key)) for key in ENV_KEYS if config.value(key)]
    return named + [(f"agent_headers.{header}", name) for header, value in config.agent.agent_headers
                    for name in ENV_REF.findall(value)]


def env_problems(config: TargetConfig) -> list[str]:
    """The variables a request may not name, each with its key."""
    allowed = allowed_env()
    return [f"{key}: the server's environment variable {name} is not in {ENV_SETTING} "
            f"(allowed: {', '.join(sorted(allowed))})" for key, name in env_names(config) if name not in allowed]


def scheduler_refusal(config: TargetConfig) -> str | None:
    """Why a request may not name the configuration's scheduler, or None (none named, or a listed one)."""
    if not config.execution.scheduler:
        return None  # the operator's default scheduler, if any
    listed = schedulers()
    if config.execution.scheduler in listed or config.execution.scheduler in listed.values():
        return None
    return (f"scheduler: {config.execution.scheduler!r} is not one of the server's Dask schedulers "
            f"(allowed: {', '.join(listed) or 'none'}); the operator lists them in {SCHEDULERS_SETTING}")


def check_request(config: TargetConfig) -> None:
    """Forbidden, naming each key and the setting that lists what is allowed, unless a request may use the
    configuration's scheduler and environment variables."""
    problems = env_problems(config)
    scheduler = scheduler_refusal(config)
    problems += [scheduler] if scheduler else []
    if problems:
        raise Forbidden("; ".join(problems),
                        fix=f"pick a listed scheduler and variable, or ask the operator to add yours to "
                            f"{SCHEDULERS_SETTING} or {ENV_SETTING}")
