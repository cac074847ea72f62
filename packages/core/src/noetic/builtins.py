"""The core's built-in plugin: registered through the same hooks as any installed plugin."""

from __future__ import annotations

from noetic.hookspecs import hookimpl
from noetic.registry import Register

__all__ = ["register_checkpoint_stores", "register_filesystems", "register_model_adapters"]


@hookimpl
def register_model_adapters(register: Register) -> None:
    """`scripted:<name>`: the offline echo model from the test kit."""
    register("scripted", "noetic.testing.scripted:scripted_model_factory")


@hookimpl
def register_filesystems(register: Register) -> None:
    """`memory://`: the in-memory filesystem (a plugin such as fs-fsspec may replace it)."""
    register("memory", "noetic.fs.memory:memory_fs_from_url")


@hookimpl
def register_checkpoint_stores(register: Register) -> None:
    """`memory://` and `sqlite:///path`: the embedded checkpoint stores."""
    register("memory", "noetic.durable.memory:memory_store_from_url")
    register("sqlite", "noetic.durable.sqlite:sqlite_store_from_url")
