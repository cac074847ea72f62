"""`FsspecTree`: the contract over any fsspec filesystem without symlinks (memory, zip, object stores).

The tree turns root-relative paths into the filesystem's own paths (`<root>/<rel>`) and builds
every operation from a handful of fsspec primitives, checking kinds first so the contract's
errors come out the same on every backend (fsspec backends disagree: the memory backend's
`rmdir` of a non-empty directory says "not found", its `mkdir` ignores missing parents, object
stores let a key live "below" another). Listings drop names the sandbox would refuse, so a key
such as `../x` written by someone else is never offered back.

How the primitives run is chosen per event loop (`anyio.lowlevel.RunVar`):

- an fsspec *async* backend is awaited natively when the loop is asyncio — the instance the
  user passed if it was created with `asynchronous=True`, else one instance per loop created
  from the URL's class and options;
- fsspec's memory store, which never blocks, is called in place;
- everything else (blocking backends, and async backends under trio) runs in worker threads
  through the sync API (`anyio.to_thread`), which fsspec bridges to its own IO loop.

Appends are read-modify-write (object stores have no append) under a per-loop lock, so
concurrent `append_text` calls through one adapter lose nothing. Renames are copy-then-delete.
"""

from __future__ import annotations

import asyncio  # noqa: TID251 - only to detect the running loop; fsspec async backends are asyncio-native
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Protocol

import anyio
from anyio.lowlevel import RunVar, checkpoint
from fsspec.implementations.memory import MemoryFileSystem
from noetic.errors import NoeticConfigError, NoeticError
from noetic.fs.contract import FileStat
from noetic.fs.errors import (
    directory_not_empty,
    file_exists,
    file_not_found,
    fs_failure,
    is_a_directory,
    not_a_directory,
)
from noetic.fs.paths import ancestors, parent, safe_path

__all__ = ["FsspecTree"]

_GLOB_CHARS = frozenset("*?[")
_MTIME_KEYS = ("mtime", "LastModified", "last_modified", "modified", "updated", "created", "time")


class _Calls(Protocol):
    """The fsspec primitives the tree is built from, awaited however the loop allows."""

    async def info(self, path: str) -> dict[str, Any] | None: ...
    async def cat(self, path: str) -> bytes: ...
    async def pipe(self, path: str, data: bytes) -> None: ...
    async def ls(self, path: str) -> list[dict[str, Any]]: ...
    async def makedirs(self, path: str) -> None: ...
    async def rm_file(self, path: str) -> None: ...
    async def rmdir(self, path: str) -> None: ...
    async def rm_tree(self, path: str) -> None: ...
    async def cp_file(self, src: str, dst: str) -> None: ...


class _ThreadCalls:
    """Blocking fsspec calls, each in a worker thread."""

    def __init__(self, fs: Any):
        self.fs = fs

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))

    async def info(self, path: str) -> dict[str, Any] | None:
        try:
            info: dict[str, Any] = await self._run(self.fs.info, path)
        except FileNotFoundError:
            return None
        return info

    async def cat(self, path: str) -> bytes:
        data: bytes = await self._run(self.fs.cat_file, path)
        return data

    async def pipe(self, path: str, data: bytes) -> None:
        await self._run(self.fs.pipe_file, path, data)

    async def ls(self, path: str) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = await self._run(self.fs.ls, path, detail=True)
        return entries

    async def makedirs(self, path: str) -> None:
        await self._run(self.fs.makedirs, path, exist_ok=True)

    async def rm_file(self, path: str) -> None:
        await self._run(self.fs.rm_file, path)

    async def rmdir(self, path: str) -> None:
        await self._run(self.fs.rmdir, path)

    async def rm_tree(self, path: str) -> None:
        await self._run(self.fs.rm, path, recursive=True)

    async def cp_file(self, src: str, dst: str) -> None:
        await self._run(self.fs.cp_file, src, dst)


class _InlineCalls(_ThreadCalls):
    """The sync API of a backend that never blocks (fsspec's memory store), called in place:
    a thread hop would cost far more than the call. Each call is still a checkpoint."""

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        await checkpoint()
        return fn(*args, **kwargs)


class _NativeCalls:
    """An fsspec async backend's coroutines, awaited on the running asyncio loop."""

    def __init__(self, fs: Any):
        self.fs = fs

    async def info(self, path: str) -> dict[str, Any] | None:
        try:
            info: dict[str, Any] = await self.fs._info(path)
        except FileNotFoundError:
            return None
        return info

    async def cat(self, path: str) -> bytes:
        data: bytes = await self.fs._cat_file(path)
        return data

    async def pipe(self, path: str, data: bytes) -> None:
        await self.fs._pipe_file(path, data)

    async def ls(self, path: str) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = await self.fs._ls(path, detail=True)
        return entries

    async def makedirs(self, path: str) -> None:
        with suppress(NotImplementedError):  # object stores have no directories to create
            await self.fs._makedirs(path, exist_ok=True)

    async def rm_file(self, path: str) -> None:
        await self.fs._rm_file(path)

    async def rmdir(self, path: str) -> None:
        remove = getattr(self.fs, "_rmdir", None)
        if remove is not None:
            await remove(path)

    async def rm_tree(self, path: str) -> None:
        await self.fs._rm(path, recursive=True)

    async def cp_file(self, src: str, dst: str) -> None:
        await self.fs._cp_file(src, dst)


@dataclass(slots=True)
class _Binding:
    """What one event loop uses: the calls and the append lock."""

    calls: _Calls
    lock: anyio.Lock


def _running_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _kind(info: dict[str, Any] | None) -> str | None:
    """`"file"`, `"directory"`, `"other"` (links, devices, …) or None for a missing entry."""
    if info is None:
        return None
    kind = info.get("type")
    return kind if kind in ("file", "directory") else "other"


def _modified(info: dict[str, Any]) -> float | None:
    for key in _MTIME_KEYS:
        value = info.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value).timestamp()
            except ValueError:
                continue
    return None


def _addressable(name: str) -> bool:
    try:
        return safe_path(name) == name
    except NoeticError:
        return False


class FsspecTree:
    """The contract's operations on root-relative paths; see the module docstring."""

    __slots__ = ("_async_factory", "_base", "_binding_var", "fs", "root")

    def __init__(self, fs: Any, root: str, *, async_factory: Callable[[], Any] | None = None):
        self.fs = fs
        self.root = root
        self._base = root.rstrip("/")
        self._async_factory = async_factory
        self._binding_var: RunVar[_Binding] = RunVar(f"noetic_fs_fsspec.tree.{id(self)}")

    def __repr__(self) -> str:
        return f"FsspecTree({type(self.fs).__name__}, root={self.root!r})"

    # --- plumbing -----------------------------------------------------------------------------

    def _binding(self) -> _Binding:
        try:
            return self._binding_var.get()
        except LookupError:
            binding = _Binding(self._calls(), anyio.Lock())
            self._binding_var.set(binding)
            return binding

    def _calls(self) -> _Calls:
        fs = self.fs
        if getattr(fs, "async_impl", False) and getattr(fs, "asynchronous", False):
            if not _running_asyncio():
                raise NoeticConfigError(
                    "INVALID_FS_ROOT",
                    f"the {type(fs).__name__} instance was created with asynchronous=True, "
                    "which only runs on asyncio",
                    hint="Pass the URL (or an instance created with asynchronous=False) to use it "
                    "on trio; Noetic then runs it in worker threads.",
                )
            return _NativeCalls(fs)
        if self._async_factory is not None and _running_asyncio():
            return _NativeCalls(self._async_factory())
        if isinstance(fs, MemoryFileSystem):
            return _InlineCalls(fs)
        return _ThreadCalls(fs)

    def _full(self, rel: str) -> str:
        """`rel` as this filesystem's own path, normalised the way its methods expect."""
        path = f"{self._base}/{rel}" if rel else (self.root or str(getattr(self.fs, "root_marker", "")))
        return str(self.fs._strip_protocol(path))

    async def _kind_of(self, calls: _Calls, rel: str) -> str | None:
        return _kind(await calls.info(self._full(rel)))

    async def _missing(self, calls: _Calls, rel: str) -> NoeticError:
        """The error for a path that is not there: NOT_A_DIRECTORY if a file is in the way."""
        for ancestor in ancestors(rel):
            kind = await self._kind_of(calls, ancestor)
            if kind is None:
                break
            if kind != "directory":
                return not_a_directory(rel, ancestor)
        return file_not_found(rel)

    async def _ensure_parents(self, calls: _Calls, rel: str, *, create: bool) -> None:
        """Check the ancestors of `rel` are directories, creating missing ones when `create`."""
        for ancestor in ancestors(rel):
            kind = await self._kind_of(calls, ancestor)
            if kind is None:
                if not create:
                    raise file_not_found(rel)
                await calls.makedirs(self._full(parent(rel)))
                return
            if kind != "directory":
                raise not_a_directory(rel, ancestor)

    async def _writable(self, calls: _Calls, rel: str) -> bool:
        """Prepare `rel` for a write; True when a file is already there."""
        if not rel:
            raise is_a_directory(rel)
        kind = await self._kind_of(calls, rel)
        if kind == "directory":
            raise is_a_directory(rel)
        if kind == "other":
            raise fs_failure("write", rel, "not a regular file")
        if kind is None:
            await self._ensure_parents(calls, rel, create=True)
        return kind == "file"

    # --- the contract -------------------------------------------------------------------------

    async def read_bytes(self, rel: str) -> bytes:
        """The content of the file `rel`."""
        if not rel:
            raise is_a_directory(rel)
        calls = self._binding().calls
        try:
            return await calls.cat(self._full(rel))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            if await self._kind_of(calls, rel) == "directory":
                raise is_a_directory(rel) from None
            raise await self._missing(calls, rel) from None

    async def write_bytes(self, rel: str, data: bytes) -> None:
        """Create or replace the file `rel`."""
        calls = self._binding().calls
        await self._writable(calls, rel)
        await calls.pipe(self._full(rel), data)

    async def append_bytes(self, rel: str, data: bytes) -> None:
        """Append to the file `rel` (read-modify-write under this loop's lock)."""
        binding = self._binding()
        async with binding.lock:
            existed = await self._writable(binding.calls, rel)
            old = await binding.calls.cat(self._full(rel)) if existed else b""
            await binding.calls.pipe(self._full(rel), old + data)

    async def mkdir(self, rel: str, *, parents: bool, exist_ok: bool) -> None:
        """Create the directory `rel`."""
        if not rel:
            if exist_ok:
                return
            raise file_exists(rel)
        calls = self._binding().calls
        kind = await self._kind_of(calls, rel)
        if kind is not None:
            if exist_ok and kind == "directory":
                return
            raise file_exists(rel)
        await self._ensure_parents(calls, rel, create=parents)
        await calls.makedirs(self._full(rel))

    async def remove(self, rel: str, *, recursive: bool) -> None:
        """Delete the file or directory `rel`."""
        if not rel:
            raise fs_failure("remove", rel, "the root directory cannot be removed")
        calls = self._binding().calls
        kind = await self._kind_of(calls, rel)
        if kind is None:
            raise await self._missing(calls, rel)
        if kind != "directory":
            await calls.rm_file(self._full(rel))
        elif recursive:
            await self._delete_tree(calls, rel)
        elif await self._entries(calls, rel):
            raise directory_not_empty(rel)
        else:
            await calls.rmdir(self._full(rel))

    async def rename(self, source: str, target: str, *, overwrite: bool) -> None:
        """Move `source` to `target` (copy then delete: fsspec has no portable rename)."""
        if not source:
            raise fs_failure("rename", source, "the root directory cannot be moved")
        calls = self._binding().calls
        moving = await self._kind_of(calls, source)
        if moving is None:
            raise await self._missing(calls, source)
        if source == target:
            return
        if target.startswith(source + "/"):
            raise fs_failure("rename", source, f"a directory cannot be moved into itself ({target!r})")
        if not target:
            raise file_exists(target)
        existing = await self._kind_of(calls, target)
        if existing is not None:
            if not overwrite:
                raise file_exists(target)
            if existing == "directory":
                raise is_a_directory(target)
            if moving == "directory":
                raise not_a_directory(target)
        else:
            await self._ensure_parents(calls, target, create=True)
        if moving == "directory":
            await self._copy_tree(calls, source, target)
            await self._delete_tree(calls, source)
        else:
            await calls.cp_file(self._full(source), self._full(target))
            await calls.rm_file(self._full(source))

    async def _delete_tree(self, calls: _Calls, rel: str) -> None:
        """Remove directory `rel` and its contents. fsspec's recursive `rm` expands glob
        characters, so a name containing `*`, `?` or `[` is deleted entry by entry instead."""
        if not _GLOB_CHARS.intersection(self._full(rel)):
            await calls.rm_tree(self._full(rel))
            return
        for entry in await self._entries(calls, rel):
            if entry.is_dir:
                await self._delete_tree(calls, entry.path)
            else:
                await calls.rm_file(self._full(entry.path))
        await calls.rmdir(self._full(rel))

    async def _copy_tree(self, calls: _Calls, source: str, target: str) -> None:
        await calls.makedirs(self._full(target))
        for entry in await self._entries(calls, source):
            child = entry.path.rpartition("/")[2]
            if entry.is_dir:
                await self._copy_tree(calls, entry.path, f"{target}/{child}")
            else:
                await calls.cp_file(self._full(entry.path), self._full(f"{target}/{child}"))

    async def exists(self, rel: str) -> bool:
        """Whether `rel` exists."""
        if not rel:
            return True
        return await self._kind_of(self._binding().calls, rel) is not None

    async def stat(self, rel: str) -> FileStat:
        """Kind, size and modification time of `rel`."""
        if not rel:
            return FileStat(path="", kind="directory")
        calls = self._binding().calls
        info = await calls.info(self._full(rel))
        if info is None:
            raise await self._missing(calls, rel)
        kind = _kind(info)
        if kind == "directory":
            return FileStat(path=rel, kind="directory", modified=_modified(info))
        if kind == "file":
            return FileStat(path=rel, kind="file", size=int(info.get("size") or 0), modified=_modified(info))
        raise fs_failure("stat", rel, "not a regular file or directory")

    async def list_dir(self, rel: str) -> list[FileStat]:
        """The files and directories in `rel`, sorted by name."""
        calls = self._binding().calls
        if rel:
            kind = await self._kind_of(calls, rel)
            if kind is None:
                raise await self._missing(calls, rel)
            if kind != "directory":
                raise not_a_directory(rel)
        return await self._entries(calls, rel)

    async def _entries(self, calls: _Calls, rel: str) -> list[FileStat]:
        full = self._full(rel).rstrip("/")
        try:
            listing = await calls.ls(self._full(rel))
        except FileNotFoundError:
            if rel:
                raise
            return []  # a root nothing was written to yet
        prefix = f"{rel}/" if rel else ""
        found: dict[str, FileStat] = {}
        for info in listing:
            name = str(self.fs._strip_protocol(str(info.get("name", "")))).rstrip("/")
            child = name.rpartition("/")[2]
            kind = _kind(info)
            if name == full or kind not in ("file", "directory") or not _addressable(child):
                continue
            path = prefix + child
            size = int(info.get("size") or 0) if kind == "file" else 0
            found[child] = FileStat(
                path=path, kind="file" if kind == "file" else "directory", size=size, modified=_modified(info)
            )
        return [found[name] for name in sorted(found)]
