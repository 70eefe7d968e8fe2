"""Saved target configurations, and the names their one id goes by.

A saved configuration has one id (`target_…`), under five names (`ID_NAMES`): records, the CLI and the dashboard
say `target_id` (a campaign's, a suite's; `--target`); the API keeps the names its specification fixes: a suite's
`agent_id`, an evaluation task's `knowledge_base_id` (the configuration it copies), and its `chat_id` / `rerank_id`
(a saved configuration whose generation / rerank settings are laid over that copy). Each face shows the meaning
where a user meets the name (the API's field descriptions, the CLI's help, docs/targets.md).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from evalcore.access.principals import LOCAL_TENANT, Action, Principal, owned, scope
from evalcore.errors import EvalError
from evalcore.formats.shapes import doc
from evalcore.language.text import name_problem, shown
from evalcore.store import NotFound, Store, dumps
from evalcore.store.target_rows import insert_target, target_row, target_rows
from evalcore.targets.allowed import check_request
from evalcore.targets.target_config import Snapshot, TargetConfig

ID_NAMES = {
    "target_id": "a saved target configuration's id (target_…): the configuration a campaign ran, or a suite's "
                 "campaigns run; the API calls it agent_id in a suite and knowledge_base_id in an evaluation task",
    "agent_id": "the saved target configuration a suite's campaigns run (its target_id: the id `config save` "
                "prints, or 'default')",
    "knowledge_base_id": "the saved target configuration an evaluation task runs: every setting copied (its "
                         "target_id; none: the defaults)",
    "chat_id": "a saved target configuration whose generation settings (generator, model, prompts) are laid over "
               "the task's configuration",
    "rerank_id": "a saved target configuration whose rerank settings are laid over the task's configuration",
}


def save_target(store: Store, config: TargetConfig, *, tenant: str = LOCAL_TENANT, name: str = "",
                principal: Principal | None = None) -> str:
    """Save a target configuration; returns its id (a suite's agent_id, an evaluation task's knowledge_base_id).

    A principal saves in its tenant and needs the full-access capability (the configuration decides
    which URLs and files the server uses), and names only the schedulers and variables the operator listed.
    """
    tenant = scope(principal, tenant, Action.CONFIGURE) or tenant
    if principal is not None:
        check_request(config)
    if name and (problem := name_problem(" ".join(name.split()))) is not None:  # line breaks are spacing
        raise EvalError(problem, where="name", found=shown(repr(name[:40])))
    target_id = f"target_{secrets.token_hex(6)}"
    text, digest = dumps(config.to_dict()), config.config_hash()
    store.write(lambda conn: insert_target(conn, target_id, tenant, name, text, digest, time.time()))
    return target_id


def get_target(store: Store, target_id: str, tenant: str | None = None, *,
               principal: Principal | None = None) -> TargetConfig:
    """A saved target configuration; NotFound when absent or owned by another tenant."""
    tenant = scope(principal, tenant)
    row = target_row(store, target_id)
    if row is None or not owned(row["tenant"], tenant):
        raise NotFound(f"no saved target {target_id!r}", where="target", fix="save one first or pass a configuration")
    return TargetConfig.from_dict(json.loads(row["config"]))


@dataclass(frozen=True)
class SavedTarget:
    """A saved target configuration as listed: its id, owner, name and keys."""

    id: str = field(metadata=doc())
    tenant: str = field(metadata=doc(hidden=True))  # a client sees its own
    name: str = field(metadata=doc())
    config: Snapshot = field(metadata=doc("every key of the configuration"))
    config_hash: str = field(metadata=doc())
    created_at: float = field(metadata=doc())

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (the tenant left out: a client sees its own)."""
        return {"id": self.id, "name": self.name, "config": self.config, "config_hash": self.config_hash,
                "created_at": self.created_at}


def list_targets(store: Store, tenant: str | None = None, *, principal: Principal | None = None) -> list[SavedTarget]:
    """Saved target configurations, newest first (of one tenant when given)."""
    tenant = scope(principal, tenant)
    rows = target_rows(store, tenant)
    return [SavedTarget(row["id"], row["tenant"], row["name"], Snapshot(json.loads(row["config"])),
                        row["config_hash"], row["created_at"]) for row in rows]
