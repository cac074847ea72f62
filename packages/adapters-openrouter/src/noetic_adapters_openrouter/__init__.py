"""The OpenRouter model adapter for Noetic.

    from noetic_adapters_openrouter import OpenRouterProvider

    provider = OpenRouterProvider()                      # key from OPENROUTER_API_KEY
    model = provider.model("anthropic/claude-sonnet-4")  # Responses API; api="chat" for Chat

or simply `model="openrouter:anthropic/claude-sonnet-4"` once the package is installed.
Names are imported lazily: the plugin entry point (`plugin.py`) must not pull in httpx.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from noetic_adapters_openrouter.adapter import OpenRouterModel
    from noetic_adapters_openrouter.billing import BillingPolicy
    from noetic_adapters_openrouter.deadlines import Deadlines
    from noetic_adapters_openrouter.provider import OpenRouterProvider
    from noetic_adapters_openrouter.retry import RetryPolicy
    from noetic_adapters_openrouter.sse import SseLimits

__all__ = ["BillingPolicy", "Deadlines", "OpenRouterModel", "OpenRouterProvider", "RetryPolicy", "SseLimits"]

_WHERE = {
    "BillingPolicy": "billing",
    "Deadlines": "deadlines",
    "OpenRouterModel": "adapter",
    "OpenRouterProvider": "provider",
    "RetryPolicy": "retry",
    "SseLimits": "sse",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'noetic_adapters_openrouter' has no attribute {name!r}")
    return getattr(import_module(f"noetic_adapters_openrouter.{module}"), name)
