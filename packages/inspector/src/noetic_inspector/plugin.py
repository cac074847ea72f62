"""The inspector's plugin module: adds `noetic inspect` through the `register_commands` hook."""

from __future__ import annotations

import noetic
from noetic.registry import Register

__all__ = ["register_commands"]


@noetic.hookimpl
def register_commands(register: Register) -> None:
    """Register `noetic inspect` (imported only when the command line is built)."""
    register("inspect", "noetic_inspector.command:inspect_command")
