"""The scratchpad context layer for Noetic.

    from noetic_layers_scratchpad import scratchpad

    harness = nt.AgentHarness("assistant", agent_graph=agent, layers=[scratchpad()])

or simply `layers=["scratchpad"]` once the package is installed. Names are imported on first
access, so loading the plugin entry point (`plugin.py`) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from noetic_layers_scratchpad.layer import Scratchpad, ScratchpadState, deep_merge, scratchpad

__all__ = ["Scratchpad", "ScratchpadState", "deep_merge", "scratchpad"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("noetic_layers_scratchpad.layer"), name)
    raise AttributeError(f"module 'noetic_layers_scratchpad' has no attribute {name!r}")
