"""Filesystem adapters for Noetic backed by fsspec: `FsspecFs` (see `noetic_fs_fsspec.adapter`).

    from noetic_fs_fsspec import FsspecFs, fsspec_fs_from_url

Names are imported on first access, so loading the plugin does not import fsspec.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from noetic_fs_fsspec.adapter import FsspecFs, fsspec_fs_from_url

__all__ = ["FsspecFs", "fsspec_fs_from_url"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("noetic_fs_fsspec.adapter"), name)
    raise AttributeError(f"module 'noetic_fs_fsspec' has no attribute {name!r}")
