"""`ctx.fs` is the harness filesystem (CTX-6), and how a harness gets one: the in-memory default,
an adapter instance, or a URL resolved through the plugin registry."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.errors import NoeticConfigError
from noetic.fs.contract import FsAdapter
from noetic.fs.memory import MemoryFs, memory_fs_from_url
from noetic.plugins import make_plugin_manager


@pytest.mark.anyio
async def test_ctx_fs_writes_are_readable_through_the_harness() -> None:
    """CTX-6: a file written via ctx.fs in a step is readable via h.fs,
    because ctx.fs is the harness's adapter."""
    seen: list[FsAdapter] = []

    async def write(input: Any, ctx: nt.Context) -> str:
        seen.append(ctx.fs)
        await ctx.fs.write_text("reports/out.txt", f"got {input}")
        return "written"

    async with nt.AgentHarness("fs", agent_graph=nt.run_code("write", write)) as h:
        await h.run("hello")
        assert await h.fs.read_text("reports/out.txt") == "got hello"
        assert seen == [h.fs]


@pytest.mark.anyio
async def test_default_filesystem_is_a_private_memory_fs() -> None:
    """Without fs=, each harness gets its own empty MemoryFs."""
    first, second = nt.AgentHarness("a"), nt.AgentHarness("b")
    assert isinstance(first.fs, MemoryFs)
    assert first.fs is first.fs
    await first.fs.write_text("x.txt", "1")
    assert not await second.fs.exists("x.txt")


def test_an_adapter_instance_is_used_as_given() -> None:
    """fs= accepts any adapter object."""
    mine = MemoryFs()
    assert nt.AgentHarness("h", fs=mine).fs is mine


def test_memory_url_resolves_to_the_builtin_without_plugins() -> None:
    """With only the core's built-in plugin, 'memory://' is a fresh MemoryFs."""
    h = nt.AgentHarness("h", fs="memory://", plugins=make_plugin_manager(load_entry_points=False))
    assert isinstance(h.fs, MemoryFs)


def test_builtin_memory_url_takes_no_path() -> None:
    """A path after memory:// means nothing to the built-in store, so it is a config error."""
    with pytest.raises(NoeticConfigError) as info:
        memory_fs_from_url("memory://scratch")
    assert info.value.code == "INVALID_FS_ROOT"
    assert "memory://" in info.value.hint


def test_unknown_scheme_without_plugins_is_a_config_error() -> None:
    """A URL no plugin handles names the registered schemes and how to get more."""
    h = nt.AgentHarness("h", fs="s3://bucket/x", plugins=make_plugin_manager(load_entry_points=False))
    with pytest.raises(NoeticConfigError) as info:
        _ = h.fs
    assert info.value.code == "UNKNOWN_FILESYSTEM"
    assert "noetic-fs-fsspec" in info.value.hint
