"""Entry point of the fsspec filesystems: `file://`, `memory://` and any other fsspec URL."""

from __future__ import annotations

import noetic
from noetic.registry import Register


@noetic.hookimpl
def register_filesystems(register: Register) -> None:
    """Local and in-memory URLs, plus every other scheme fsspec knows (the `*` fallback)."""
    for scheme in ("file", "memory", "*"):
        register(scheme, "noetic_fs_fsspec.adapter:fsspec_fs_from_url")
