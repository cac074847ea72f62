"""The inspector's plugin module: adds `noetic inspect` through the `register_commands` hook."""

from __future__ import annotations

from typing import Any

import noetic

__all__ = ["register_commands"]


@noetic.hookimpl
def register_commands(register: Any) -> None:
    """Register `noetic inspect` (imported only when the command line is built)."""
    register("inspect", "noetic_inspector.command:inspect_command")
