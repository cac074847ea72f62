"""Entry point of the scratchpad layer: registers the layer factory `scratchpad` (lazily)."""

from __future__ import annotations

import noetic
from noetic.registry import Register


@noetic.hookimpl
def register_context_layers(register: Register) -> None:
    """`layers=["scratchpad"]` resolves to `noetic_layers_scratchpad.scratchpad()`."""
    register("scratchpad", "noetic_layers_scratchpad.layer:scratchpad")
