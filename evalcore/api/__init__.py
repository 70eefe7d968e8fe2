"""The REST API (evaluation tasks and suites) with API keys; `create_app` builds it."""

from evalcore.api.app import create_app

__all__ = ["create_app"]
