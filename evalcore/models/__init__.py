"""Chat models: OpenAI-compatible endpoints and the optional local SmolLM2, behind one protocol."""

from evalcore.models.chat import CallCache, ChatModel, ChatReply, Message, ModelError, cache_key, cached_chat
from evalcore.models.http import backoff_delay, check_reachable, new_client, post_json
from evalcore.models.local import LOCAL_INSTALL, LOCAL_MODEL_NAME, LocalChatModel, local_model_path
from evalcore.models.openai import OpenAIChatModel

__all__ = [
    "LOCAL_INSTALL", "LOCAL_MODEL_NAME", "CallCache", "ChatModel", "ChatReply", "LocalChatModel", "Message", "ModelError",
    "OpenAIChatModel", "backoff_delay", "cache_key", "cached_chat", "check_reachable", "local_model_path",
    "new_client", "post_json",
]
