"""Filesystem adapters for Noetic backed by fsspec: `FsspecFs` (see `noetic_fs_fsspec.adapter`).

`FsspecFs` is imported on first access, so loading the plugin does not import fsspec.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FsspecFs"]


def __getattr__(name: str) -> Any:
    if name == "FsspecFs":
        from noetic_fs_fsspec.adapter import FsspecFs

        return FsspecFs
    raise AttributeError(f"module 'noetic_fs_fsspec' has no attribute {name!r}")
