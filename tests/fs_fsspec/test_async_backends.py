"""How `FsspecFs` runs fsspec async backends: awaited natively where the loop is asyncio, through
worker threads everywhere else, so the package works on trio too (issue 8)."""

from __future__ import annotations

import fsspec
import pytest
from noetic.errors import NoeticConfigError
from noetic_fs_fsspec.adapter import FsspecFs


@pytest.mark.anyio
async def test_url_async_backend_is_native_on_asyncio_and_threaded_on_trio(
    asyncmem_url: str, asyncmem_calls: list[tuple[str, str]], anyio_backend: str
) -> None:
    """From a URL, asyncio awaits the backend's coroutines on its own loop (MainThread); trio
    goes through fsspec's sync bridge, so they run on fsspec's IO thread."""
    fs = FsspecFs(asyncmem_url)
    await fs.write_text("a/b.txt", "hello")
    assert await fs.read_text("a/b.txt") == "hello"
    threads = {thread for _, thread in asyncmem_calls}
    expected = "MainThread" if anyio_backend == "asyncio" else "fsspecIO"
    assert threads == {expected}
    assert {name for name, _ in asyncmem_calls} >= {"info", "pipe_file", "cat_file"}


@pytest.mark.anyio
async def test_sync_mode_instance_runs_in_threads(
    asyncmem_url: str, asyncmem_calls: list[tuple[str, str]]
) -> None:
    """An async backend instance created with asynchronous=False is used through its sync API."""
    instance = fsspec.filesystem("asyncmem")
    fs = FsspecFs(instance, root=asyncmem_url.removeprefix("asyncmem://"))
    await fs.write_text("x.txt", "1")
    assert await fs.read_text("x.txt") == "1"
    assert {thread for _, thread in asyncmem_calls} == {"fsspecIO"}


@pytest.mark.anyio
async def test_asynchronous_instance_needs_asyncio(
    asyncmem_url: str, asyncmem_calls: list[tuple[str, str]], anyio_backend: str
) -> None:
    """An instance created with asynchronous=True is awaited natively on asyncio; on trio it
    cannot run at all, and the error says what to pass instead."""
    instance = fsspec.filesystem("asyncmem", asynchronous=True)
    fs = FsspecFs(instance, root=asyncmem_url.removeprefix("asyncmem://"))
    if anyio_backend == "asyncio":
        await fs.write_text("x.txt", "1")
        assert await fs.read_text("x.txt") == "1"
        assert {thread for _, thread in asyncmem_calls} == {"MainThread"}
    else:
        with pytest.raises(NoeticConfigError) as info:
            await fs.write_text("x.txt", "1")
        assert info.value.code == "INVALID_FS_ROOT"
        assert "asynchronous=False" in info.value.hint
        assert asyncmem_calls == []
