"""A finished campaign's conversations judged whole (evalcore.judges.conversation): does an answer contradict an
earlier one, did the conversation reach what the user asked. Asked with the campaign's judge model and settings,
each verdict kept per campaign, conversation and judge (asked again, it replaces the one kept)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from evalcore.access.principals import Action, Principal, scope
from evalcore.campaigns.manager import judge_settings
from evalcore.campaigns.queries import get_campaign
from evalcore.errors import EvalError
from evalcore.judges import Verdict
from evalcore.judges.conversation import CONVERSATION_JUDGES, ConversationJudging, Exchange
from evalcore.models import ChatModel
from evalcore.store import Conflict, Store, StoreCallCache
from evalcore.store.conversation_rows import exchange_rows, put_conversation_verdicts
from evalcore.targets.generators import build_chat_model, build_judge_model


def conversation_exchanges(store: Store, campaign_id: str) -> dict[str, list[Exchange]]:
    """Each conversation's turns in turn order, as its judges read them (the answers stored; a reference answer or
    the expected answer as what a good answer says)."""
    rows = exchange_rows(store, campaign_id)
    out: dict[str, list[Exchange]] = {}
    for row in rows:
        references = json.loads(row["refs"] or "[]")
        expected = row["expected_answer"] or (references[0] if references else None)
        out.setdefault(row["conversation"], []).append(Exchange(row["question"], row["answer"], expected))
    return out


def judge_conversations(store: Store, campaign_id: str, tenant: str | None = None, *,
                        principal: Principal | None = None, model: ChatModel | None = None,
                        judges: Sequence[str] = CONVERSATION_JUDGES) -> dict[str, dict[str, Verdict]]:
    """Ask the conversation judges about each conversation of a finished campaign and keep their verdicts.

    The judge model is the campaign's (its judge keys, else its generator under judge_kind "auto") unless `model` is
    given; its calls go through the store's model-call cache. EvalError when the campaign is still running or has no
    conversation, or when no judge model can be built (naming the keys to set).
    """
    tenant = scope(principal, tenant, Action.CHANGE)
    campaign = get_campaign(store, campaign_id, tenant)
    unknown = [name for name in judges if name not in CONVERSATION_JUDGES]
    if unknown:
        raise EvalError(f"unknown conversation judge {unknown[0]!r}", where="judges",
                        expected=", ".join(CONVERSATION_JUDGES))
    if campaign.active:
        raise Conflict("the campaign is still running: its conversations are judged once it has ended",
                       running_id=campaign.id, where=f"campaign {campaign.name}",
                       fix="wait for it to end, or cancel it")
    exchanges = conversation_exchanges(store, campaign_id)
    if not exchanges:
        raise EvalError("the campaign has no conversation: its questions were asked alone", where=f"campaign "
                        f"{campaign.name}", fix="run a suite or dataset whose questions have a conversation column")
    config = campaign.config.target
    cache = StoreCallCache(store)
    if model is None:
        own = build_chat_model(config, cache) if config.kind == "rag" else None
        model = build_judge_model(config, own, cache)
    judging = ConversationJudging(judge_settings(model, config, 1))
    verdicts = {name: judging.judge(turns, judges) for name, turns in exchanges.items()}
    now = time.time()
    store.write(lambda conn: put_conversation_verdicts(
        conn, [(campaign_id, name, judge, json.dumps(verdict.to_dict(), ensure_ascii=False), now)
               for name, by_judge in verdicts.items() for judge, verdict in by_judge.items()]))
    return verdicts
