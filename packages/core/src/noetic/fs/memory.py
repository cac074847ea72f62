"""`MemoryFs`: the embedded default filesystem, a tree of dicts that lives as long as the object.

Each harness without `fs=` gets its own empty `MemoryFs`, so agents and tests never see each
other's files. Every operation is a single step with respect to the event loop (it awaits one
checkpoint first, then runs to the end), so concurrent operations never observe half a write
and concurrent `append_text` calls never lose data. It has no symlinks, so `safe_path` alone is
the whole sandbox.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from anyio.lowlevel import checkpoint

from noetic.errors import NoeticConfigError, NoeticError
from noetic.fs.contract import FileStat, decode_text, encode_text
from noetic.fs.errors import (
    directory_not_empty,
    file_exists,
    file_not_found,
    fs_failure,
    is_a_directory,
    not_a_directory,
)
from noetic.fs.glob import glob_paths
from noetic.fs.paths import parent, safe_path

__all__ = ["MemoryFs", "memory_fs_from_url"]


@dataclass(slots=True)
class _File:
    data: bytes
    modified: float


@dataclass(slots=True)
class _Dir:
    modified: float
    children: dict[str, _Dir | _File] = field(default_factory=dict)


class MemoryFs:
    """An in-process filesystem implementing `FsAdapter`; see the module docstring."""

    __slots__ = ("_root",)

    def __init__(self) -> None:
        self._root = _Dir(time.time())

    def __repr__(self) -> str:
        return "MemoryFs()"

    # --- tree navigation ----------------------------------------------------------------------

    def _lookup(self, rel: str) -> _Dir | _File | None:
        """The node at `rel`, None when missing; `NOT_A_DIRECTORY` when an ancestor is a file."""
        node: _Dir | _File = self._root
        walked: list[str] = []
        for name in rel.split("/") if rel else ():
            if isinstance(node, _File):
                raise not_a_directory(rel, "/".join(walked))
            child = node.children.get(name)
            if child is None:
                return None
            node = child
            walked.append(name)
        return node

    def _directory(self, rel: str, target: str, *, create: bool) -> _Dir:
        """The directory `rel` on the way to `target`, creating missing ones when `create`."""
        node = self._root
        walked: list[str] = []
        for name in rel.split("/") if rel else ():
            walked.append(name)
            child = node.children.get(name)
            if child is None:
                if not create:
                    raise file_not_found(target)
                child = node.children[name] = _Dir(time.time())
                node.modified = child.modified
            if isinstance(child, _File):
                raise not_a_directory(target, "/".join(walked))
            node = child
        return node

    def _stat(self, rel: str, node: _Dir | _File) -> FileStat:
        if isinstance(node, _File):
            return FileStat(path=rel, kind="file", size=len(node.data), modified=node.modified)
        return FileStat(path=rel, kind="directory", modified=node.modified)

    def _put(self, rel: str, data: bytes, *, append: bool) -> None:
        if not rel:
            raise is_a_directory(rel)
        directory = self._directory(parent(rel), rel, create=True)
        name = rel.rpartition("/")[2]
        existing = directory.children.get(name)
        if isinstance(existing, _Dir):
            raise is_a_directory(rel)
        if append and existing is not None:
            data = existing.data + data
        now = time.time()
        directory.children[name] = _File(data, now)
        directory.modified = now

    # --- the contract -------------------------------------------------------------------------

    async def read_bytes(self, path: str) -> bytes:
        """The whole content of the file at `path`."""
        rel = safe_path(path)
        await checkpoint()
        node = self._lookup(rel)
        if node is None:
            raise file_not_found(rel)
        if isinstance(node, _Dir):
            raise is_a_directory(rel)
        return node.data

    async def read_text(self, path: str, *, encoding: str = "utf-8") -> str:
        """The content of the file at `path`, decoded."""
        rel = safe_path(path)
        return decode_text(await self.read_bytes(rel), rel, encoding)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace the file at `path` with `data` (parents are created)."""
        rel = safe_path(path)
        payload = bytes(data)
        await checkpoint()
        self._put(rel, payload, append=False)

    async def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        """Create or replace the file at `path` with encoded `text`."""
        rel = safe_path(path)
        await self.write_bytes(rel, encode_text(text, rel, encoding))

    async def append_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        """Append encoded `text` to the file at `path`, creating it if missing."""
        rel = safe_path(path)
        payload = encode_text(text, rel, encoding)
        await checkpoint()
        self._put(rel, payload, append=True)

    async def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False) -> None:
        """Create the directory `path` (`pathlib` semantics for `parents` and `exist_ok`)."""
        rel = safe_path(path)
        await checkpoint()
        existing = self._lookup(rel)
        if existing is not None:
            if isinstance(existing, _Dir) and exist_ok:
                return
            raise file_exists(rel)
        directory = self._directory(parent(rel), rel, create=parents)
        now = time.time()
        directory.children[rel.rpartition("/")[2]] = _Dir(now)
        directory.modified = now

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Delete the file or directory at `path` (a non-empty directory needs `recursive`)."""
        rel = safe_path(path)
        if not rel:
            raise fs_failure("remove", rel, "the root directory cannot be removed")
        await checkpoint()
        node = self._lookup(rel)
        if node is None:
            raise file_not_found(rel)
        if isinstance(node, _Dir) and node.children and not recursive:
            raise directory_not_empty(rel)
        directory = self._directory(parent(rel), rel, create=False)
        del directory.children[rel.rpartition("/")[2]]
        directory.modified = time.time()

    async def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        """Move the file or directory `src` to `dst` (see the contract for `overwrite`)."""
        source, target = safe_path(src), safe_path(dst)
        if not source:
            raise fs_failure("rename", source, "the root directory cannot be moved")
        await checkpoint()
        node = self._lookup(source)
        if node is None:
            raise file_not_found(source)
        if source == target:
            return
        if target.startswith(source + "/"):
            raise fs_failure("rename", source, f"a directory cannot be moved into itself ({target!r})")
        existing = self._lookup(target)
        if existing is not None:
            if not overwrite:
                raise file_exists(target)
            if isinstance(existing, _Dir):
                raise is_a_directory(target)
            if isinstance(node, _Dir):
                raise not_a_directory(target)
        destination = self._directory(parent(target), target, create=True)
        origin = self._directory(parent(source), source, create=False)
        del origin.children[source.rpartition("/")[2]]
        destination.children[target.rpartition("/")[2]] = node
        now = time.time()
        origin.modified = destination.modified = now

    async def exists(self, path: str) -> bool:
        """Whether a file or directory exists at `path`."""
        rel = safe_path(path)
        await checkpoint()
        try:
            return self._lookup(rel) is not None
        except NoeticError as exc:  # an ancestor that is a file: nothing can exist below it
            if exc.code == "NOT_A_DIRECTORY":
                return False
            raise

    async def stat(self, path: str) -> FileStat:
        """Kind, size and modification time of `path`."""
        rel = safe_path(path)
        await checkpoint()
        node = self._lookup(rel)
        if node is None:
            raise file_not_found(rel)
        return self._stat(rel, node)

    async def list_dir(self, path: str = "") -> list[FileStat]:
        """The entries of the directory `path`, sorted by name."""
        rel = safe_path(path)
        await checkpoint()
        node = self._lookup(rel)
        if node is None:
            raise file_not_found(rel)
        if isinstance(node, _File):
            raise not_a_directory(rel)
        prefix = f"{rel}/" if rel else ""
        return [self._stat(prefix + name, node.children[name]) for name in sorted(node.children)]

    async def glob(self, pattern: str) -> list[str]:
        """Sorted relative paths matching `pattern` (see `noetic.fs.glob`)."""
        return await glob_paths(self, pattern)


def memory_fs_from_url(url: str) -> MemoryFs:
    """A fresh `MemoryFs` for `memory://` (the registry's built-in `memory` filesystem)."""
    scheme, sep, rest = url.partition("://")
    if scheme != "memory" or not sep or rest.strip("/"):
        raise NoeticConfigError(
            "INVALID_FS_ROOT",
            f"the built-in memory filesystem takes exactly 'memory://', got {url!r}",
            hint="Use fs='memory://' (each harness gets its own empty store), or install "
            "noetic-fs-fsspec for named in-memory roots such as 'memory://scratch'.",
        )
    return MemoryFs()
