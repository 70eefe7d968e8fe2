"""Chat models: OpenAI-compatible endpoints and the optional local SmolLM2, behind one protocol."""

from evalcore.models.chat import (
    CallCache,
    ChatModel,
    ChatReply,
    Message,
    Meter,
    ModelError,
    cache_key,
    cached_chat,
    metered,
)
from evalcore.models.http import backoff_delay, check_reachable, new_client, post_json
from evalcore.models.local import LOCAL_INSTALL, LOCAL_MODEL_NAME, LocalChatModel, local_model_path
from evalcore.models.openai import OpenAIChatModel

__all__ = [
    "LOCAL_INSTALL", "LOCAL_MODEL_NAME", "CallCache", "ChatModel", "ChatReply", "LocalChatModel", "Message", "Meter", "ModelError",
    "OpenAIChatModel", "backoff_delay", "cache_key", "cached_chat", "check_reachable", "local_model_path", "metered",
    "new_client", "post_json",
]
