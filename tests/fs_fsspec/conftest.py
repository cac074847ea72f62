"""Fixtures for the fsspec tests, and a small fsspec *async* backend they use.

fsspec ships no async backend that works offline, so this one stands in for s3fs and friends.
Every coroutine appends `(method, thread name)` to `CALLS`: `MainThread` means it was awaited
natively on the test's event loop, `fsspecIO` that it went through fsspec's sync bridge (from
a worker thread).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

import fsspec
import pytest
from fsspec.asyn import AsyncFileSystem, sync_wrapper

CALLS: list[tuple[str, str]] = []


class AsyncMemoryFileSystem(AsyncFileSystem):  # type: ignore[misc]
    """An async in-memory filesystem (`asyncmem://`) with real directories."""

    protocol = "asyncmem"
    root_marker = "/"
    cachable = False
    files: ClassVar[dict[str, bytes]] = {}
    dirs: ClassVar[set[str]] = {"/"}

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        text = str(path)
        if text.startswith("asyncmem://"):
            text = text[len("asyncmem://") :]
        return "/" + text.strip("/")

    def _record(self, name: str) -> None:
        CALLS.append((name, threading.current_thread().name))

    def _kind(self, path: str) -> str | None:
        if path in self.files:
            return "file"
        if path in self.dirs or any(k.startswith(path.rstrip("/") + "/") for k in [*self.files, *self.dirs]):
            return "directory"
        return None

    async def _info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self._record("info")
        path = self._strip_protocol(path)
        kind = self._kind(path)
        if kind is None:
            raise FileNotFoundError(path)
        size = len(self.files[path]) if kind == "file" else 0
        return {"name": path, "type": kind, "size": size}

    async def _ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        self._record("ls")
        path = self._strip_protocol(path)
        kind = self._kind(path)
        if kind is None:
            raise FileNotFoundError(path)
        if kind == "file":
            entries = [{"name": path, "type": "file", "size": len(self.files[path])}]
        else:
            prefix = path.rstrip("/") + "/"
            names = {
                prefix + k[len(prefix) :].split("/")[0]
                for k in [*self.files, *self.dirs]
                if k.startswith(prefix) and k != prefix
            }
            entries = [await self._info(n) for n in sorted(names)]
        return entries if detail else [e["name"] for e in entries]

    async def _cat_file(self, path: str, start: Any = None, end: Any = None, **kwargs: Any) -> bytes:
        self._record("cat_file")
        path = self._strip_protocol(path)
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path][start:end]

    async def _pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        self._record("pipe_file")
        self.files[self._strip_protocol(path)] = bytes(value)

    async def _rm_file(self, path: str, **kwargs: Any) -> None:
        self._record("rm_file")
        path = self._strip_protocol(path)
        if self.files.pop(path, None) is None:
            raise FileNotFoundError(path)

    async def _rmdir(self, path: str) -> None:
        self._record("rmdir")
        self.dirs.discard(self._strip_protocol(path))

    async def _rm(self, path: Any, recursive: bool = False, **kwargs: Any) -> None:
        self._record("rm")
        path = self._strip_protocol(path)
        prefix = path.rstrip("/") + "/"
        for key in [k for k in self.files if k == path or k.startswith(prefix)]:
            del self.files[key]
        for key in [d for d in self.dirs if d == path or d.startswith(prefix)]:
            self.dirs.discard(key)

    rmdir = sync_wrapper(_rmdir)  # fsspec mirrors only its listed methods; backends add the rest

    async def _makedirs(self, path: str, exist_ok: bool = False) -> None:
        self._record("makedirs")
        parts = self._strip_protocol(path).strip("/").split("/")
        for i in range(len(parts)):
            self.dirs.add("/" + "/".join(parts[: i + 1]))

    async def _mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        await self._makedirs(path, exist_ok=True)

    async def _cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        self._record("cp_file")
        self.files[self._strip_protocol(path2)] = self.files[self._strip_protocol(path1)]


@pytest.fixture
def asyncmem_calls() -> Iterator[list[tuple[str, str]]]:
    """The `(method, thread name)` log of `asyncmem://` calls, emptied around each test."""
    CALLS.clear()
    yield CALLS
    CALLS.clear()


@pytest.fixture
def asyncmem_url() -> str:
    """A fresh `asyncmem://` root (the backend is registered with fsspec on first use)."""
    fsspec.register_implementation("asyncmem", AsyncMemoryFileSystem, clobber=True)
    return f"asyncmem://root-{uuid.uuid4().hex}"
