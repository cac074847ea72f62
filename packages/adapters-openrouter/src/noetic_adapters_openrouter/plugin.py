"""Entry point of the OpenRouter adapter: registers the `openrouter` model prefix (lazily)."""

from __future__ import annotations

import noetic
from noetic.registry import Register


@noetic.hookimpl
def register_model_adapters(register: Register) -> None:
    """`model="openrouter:<model id>"` resolves to an OpenRouter adapter."""
    register("openrouter", "noetic_adapters_openrouter.provider:model_from_id")
