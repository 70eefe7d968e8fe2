"""Chat models: OpenAI-compatible endpoints and the optional local SmolLM2, behind one protocol."""

from evalcore.models.chat import (
    CallCache,
    ChatModel,
    ChatReply,
    ContextOverflow,
    Message,
    Meter,
    ModelError,
    ReplyTooLarge,
    cache_key,
    cached_chat,
    counted_as,
    departures,
    metered,
    notice,
    noticed,
    overflowed,
    refuse_long_reply,
)
from evalcore.models.http import backoff_delay, check_reachable, new_client, post_json, reply_byte_limit
from evalcore.models.local_model import LOCAL_INSTALL, LOCAL_MODEL_NAME, LocalChatModel, local_model_path
from evalcore.models.openai import OpenAIChatModel

__all__ = [
    "LOCAL_INSTALL", "LOCAL_MODEL_NAME", "CallCache", "ChatModel", "ChatReply", "ContextOverflow", "LocalChatModel",
    "Message", "Meter", "ModelError",
    "OpenAIChatModel", "ReplyTooLarge", "backoff_delay", "cache_key", "cached_chat", "check_reachable", "counted_as",
    "departures",
    "local_model_path", "metered", "new_client", "notice", "noticed", "overflowed", "post_json", "refuse_long_reply",
    "reply_byte_limit",
]
