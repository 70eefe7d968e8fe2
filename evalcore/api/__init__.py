"""The REST API (seeds 000 and 003) with API keys; `create_app` builds it."""

from evalcore.api.app import create_app

__all__ = ["create_app"]
