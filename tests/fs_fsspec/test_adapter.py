"""`FsspecFs` construction, registry resolution and local durability (issue 8,
reliability.md §2 "Atomic writes are our job" and §3.1)."""

from __future__ import annotations

import os
import stat
import uuid
import zipfile
from pathlib import Path
from typing import Any

import fsspec
import noetic as nt
import pytest
from fsspec.implementations.dirfs import DirFileSystem
from noetic.errors import NoeticConfigError, NoeticError
from noetic.fs.memory import MemoryFs
from noetic.plugins import make_plugin_manager
from noetic_fs_fsspec.adapter import FsspecFs, fsspec_fs_from_url


def _names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


# --- registry resolution ----------------------------------------------------------------------


def test_file_url_resolves_through_the_plugin(tmp_path: Path) -> None:
    """AgentHarness(fs='file:///…') is an FsspecFs rooted at that directory (created if missing)."""
    h = nt.AgentHarness("h", fs=f"file://{tmp_path}/agent")
    assert isinstance(h.fs, FsspecFs)
    assert h.fs.root == str((tmp_path / "agent").resolve())
    assert (tmp_path / "agent").is_dir()


def test_plain_path_means_local(tmp_path: Path) -> None:
    """A URL without a scheme is a local path."""
    h = nt.AgentHarness("h", fs=str(tmp_path))
    assert isinstance(h.fs, FsspecFs)
    assert h.fs.protocol == "file"


def test_memory_url_is_replaced_by_the_plugin() -> None:
    """With fs-fsspec installed, 'memory://' goes to fsspec's memory store (a plugin may replace
    a built-in; registry policy) — and 'memory://name' picks a root inside it."""
    h = nt.AgentHarness("h", fs="memory://")
    assert isinstance(h.fs, FsspecFs)
    assert h.fs.protocol == "memory"
    named = nt.AgentHarness("n", fs="memory://scratch").fs
    assert isinstance(named, FsspecFs)
    assert named.root == "/scratch"


def test_builtin_memory_is_still_used_without_the_plugin() -> None:
    """Without the plugin, the core's MemoryFs answers 'memory://'."""
    h = nt.AgentHarness("h", fs="memory://", plugins=make_plugin_manager(load_entry_points=False))
    assert isinstance(h.fs, MemoryFs)


def test_other_schemes_fall_back_to_fsspec(asyncmem_url: str) -> None:
    """Any scheme fsspec knows resolves through the '*' registration."""
    h = nt.AgentHarness("h", fs=asyncmem_url)
    assert isinstance(h.fs, FsspecFs)
    assert h.fs.protocol == "asyncmem"


def test_unknown_scheme_is_a_config_error() -> None:
    """A scheme fsspec cannot open says which backend to install."""
    with pytest.raises(NoeticConfigError) as info:
        fsspec_fs_from_url("nosuchproto://bucket/x")
    assert info.value.code == "UNKNOWN_FILESYSTEM"
    assert "Install" in info.value.hint


@pytest.mark.anyio
async def test_ctx_fs_on_a_local_directory(tmp_path: Path) -> None:
    """CTX-6 on disk: a step writes via ctx.fs; h.fs and the real directory both see it."""

    async def write(input: Any, ctx: nt.Context) -> None:
        await ctx.fs.write_text("out/result.txt", str(input))

    async with nt.AgentHarness("d", agent_graph=nt.run_code("w", write), fs=f"file://{tmp_path}") as h:
        await h.run("42")
        assert await h.fs.read_text("out/result.txt") == "42"
    assert (tmp_path / "out" / "result.txt").read_text() == "42"


# --- construction -----------------------------------------------------------------------------


def test_instance_needs_a_root() -> None:
    """An fsspec instance alone does not say where the sandbox is."""
    with pytest.raises(NoeticConfigError) as info:
        FsspecFs(fsspec.filesystem("memory"))
    assert info.value.code == "INVALID_FS_ROOT"


@pytest.mark.anyio
async def test_url_root_argument_is_a_safe_subdirectory() -> None:
    """root= with a URL is a relative directory below the URL's path, checked by the sandbox."""
    name = f"sub-{uuid.uuid4().hex}"
    fs = FsspecFs("memory://base", root=name)
    assert fs.root == f"/base/{name}"
    await fs.write_text("f.txt", "x")
    assert fsspec.filesystem("memory").cat_file(f"/base/{name}/f.txt") == b"x"
    with pytest.raises(NoeticError) as info:
        FsspecFs("memory://base", root="../elsewhere")
    assert info.value.code == "PATH_ESCAPE"


def test_root_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """The local root must be a directory."""
    (tmp_path / "f").write_text("x")
    with pytest.raises(NoeticConfigError) as info:
        FsspecFs(f"file://{tmp_path}/f")
    assert info.value.code == "INVALID_FS_ROOT"


@pytest.mark.anyio
async def test_dirfilesystem_is_unwrapped_and_confined(tmp_path: Path) -> None:
    """A DirFileSystem over a local disk gets the local sandbox: its own prefix-only
    confinement would follow this symlink out (reliability.md §3.1)."""
    (tmp_path / "outside.txt").write_text("secret")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.txt").symlink_to(tmp_path / "outside.txt")
    dirfs = DirFileSystem(path=str(root), fs=fsspec.filesystem("file"))
    assert dirfs.cat_file("link.txt") == b"secret"  # the hole FsspecFs closes
    fs = FsspecFs(dirfs, root="/")
    assert fs.root == str(root.resolve())
    with pytest.raises(NoeticError) as info:
        await fs.read_text("link.txt")
    assert info.value.code == "PATH_ESCAPE"


def test_local_disk_inside_another_wrapper_is_refused(tmp_path: Path) -> None:
    """A cache over file:// hides the local disk from the sandbox, so it is refused."""
    with pytest.raises(NoeticConfigError) as info:
        FsspecFs(f"simplecache::file://{tmp_path}", cache_storage=str(tmp_path / "cache"))
    assert info.value.code == "INVALID_FS_ROOT"


def test_storage_options_only_with_urls() -> None:
    """Keyword options are for the URL's filesystem; with an instance they are a mistake."""
    with pytest.raises(NoeticConfigError):
        FsspecFs(fsspec.filesystem("memory"), root="/x", anon=True)


# --- local durability and messages ------------------------------------------------------------


@pytest.mark.anyio
async def test_local_write_is_atomic_and_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write fsyncs the data file and then the directory, leaves no temp file behind, and
    keeps the replaced file's permissions."""
    fs = FsspecFs(f"file://{tmp_path}")
    await fs.write_text("a.txt", "v1")
    (tmp_path / "a.txt").chmod(0o600)
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    await fs.write_text("a.txt", "v2")
    assert synced == ["file", "dir"]
    assert (tmp_path / "a.txt").read_text() == "v2"
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o600
    assert _names(tmp_path) == ["a.txt"]


@pytest.mark.anyio
async def test_failed_local_write_keeps_the_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the replace step fails, the old file is intact and the temp file is cleaned up."""
    fs = FsspecFs(f"file://{tmp_path}")
    await fs.write_text("a.txt", "old")

    def failing_replace(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device", str(tmp_path / "a.txt"))

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(NoeticError) as info:
        await fs.write_text("a.txt", "new")
    assert info.value.code == "FS_ERROR"
    assert "No space left on device" in info.value.message
    assert str(tmp_path) not in info.value.message
    assert (tmp_path / "a.txt").read_text() == "old"
    assert _names(tmp_path) == ["a.txt"]


@pytest.mark.anyio
async def test_local_errors_never_show_the_host_root(tmp_path: Path) -> None:
    """Messages name root-relative paths only."""
    fs = FsspecFs(f"file://{tmp_path}")
    await fs.write_text("f.txt", "x")
    for call in (fs.read_text("missing.txt"), fs.list_dir("f.txt"), fs.mkdir("f.txt")):
        with pytest.raises(NoeticError) as info:
            await call
        assert str(tmp_path) not in str(info.value)


@pytest.mark.anyio
async def test_special_files_are_refused_not_blocked_on(tmp_path: Path) -> None:
    """A FIFO in the root is neither listed nor read (reading it would block forever)."""
    os.mkfifo(tmp_path / "pipe")
    fs = FsspecFs(f"file://{tmp_path}")
    assert await fs.list_dir() == []
    with pytest.raises(NoeticError) as info:
        await fs.read_bytes("pipe")
    assert info.value.code == "FS_ERROR"
    with pytest.raises(NoeticError):
        await fs.append_text("pipe", "x")


@pytest.mark.anyio
async def test_zip_archive_is_readable_and_refuses_writes(tmp_path: Path) -> None:
    """A zip archive (instance or chained URL) lists and reads like any other tree; writing to
    it is FS_ERROR naming the relative path."""
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("docs/a.txt", "hello")
        z.writestr("b.txt", "bee")
    fs = FsspecFs(fsspec.filesystem("zip", fo=str(archive)), root="/")
    assert await fs.glob("**") == ["b.txt", "docs", "docs/a.txt"]
    assert await fs.read_text("docs/a.txt") == "hello"
    with pytest.raises(NoeticError) as info:
        await fs.write_text("c.txt", "x")
    assert info.value.code == "FS_ERROR"
    assert "'c.txt'" in info.value.message
    chained = FsspecFs(f"zip://docs::file://{archive}")
    assert [e.path for e in await chained.list_dir()] == ["a.txt"]
