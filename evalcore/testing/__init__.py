"""Test helpers that are part of the product: a fake OpenAI-compatible server for offline runs."""

from evalcore.testing.openai_server import FakeOpenAIServer, Reply

__all__ = ["FakeOpenAIServer", "Reply"]
