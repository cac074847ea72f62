"""`LocalTree`: the local-disk operations behind `FsspecFs`, confined to a root by file descriptors.

A lexical check cannot stop a symlink inside the root that points out of it. So every
operation walks from the root one name at a time with `openat`-style calls (`dir_fd=`) and
`O_NOFOLLOW`: no component, ancestor or leaf, is ever followed through a symlink, and a
directory renamed or swapped for a symlink half-way cannot redirect the walk, because each step
opens the next name relative to the directory already held open. Meeting a symlink anywhere is
`PATH_ESCAPE`; listings leave symlinks (and FIFOs, sockets, devices) out.

Writes are atomic and durable: a temporary file in the target's directory, written, `fsync`ed,
`os.replace`d over the target, then the directory itself `fsync`ed. A crash leaves either the
old or the new content, plus at worst a stray `.noetic-*.tmp` file. Recursive removal walks the
tree depth first without recursion, never following a link (links inside are unlinked), and
holds at most `_HELD_DIRS` directory descriptors however deep the tree is (`shutil.rmtree`
recurses once per level and holds a descriptor per level: a tree a few thousand levels deep,
which a model can build, fails it).

Every method is blocking and is meant to run in a worker thread (`FsspecFs` does that). It needs
a platform with `dir_fd` support (Linux, macOS, the BSDs); `check_platform` says so otherwise.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat as st
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import partial

from anyio import to_thread
from noetic.errors import NoeticConfigError, NoeticError
from noetic.fs.contract import FileStat
from noetic.fs.errors import (
    file_exists,
    file_not_found,
    from_os_error,
    fs_failure,
    is_a_directory,
    not_a_directory,
    path_escape,
)
from noetic.fs.paths import parent, safe_path

__all__ = ["LocalTree", "ThreadedLocalTree", "check_platform"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC


def check_platform() -> None:
    """Raise `INVALID_FS_ROOT` where descriptor-relative calls cannot confine paths."""
    needed = (os.open, os.stat, os.mkdir, os.rename, os.unlink, os.rmdir)  # os.replace shares renameat
    if (
        not (_NOFOLLOW and _DIRECTORY)
        or not all(fn in os.supports_dir_fd for fn in needed)
        or os.scandir not in os.supports_fd
        or not shutil.rmtree.avoids_symlink_attacks
    ):
        raise NoeticConfigError(
            "INVALID_FS_ROOT",
            "this platform cannot confine local paths safely (no dir_fd / O_NOFOLLOW support)",
            hint="Use a memory:// or object-store filesystem here, or run on Linux or macOS.",
        )


def _symlink(path: str, component: str) -> NoeticError:
    where = "it is a symbolic link" if component == path else f"{component!r} is a symbolic link"
    return path_escape(path, f"{where}, and links are never followed")


class LocalTree:
    """Blocking, descriptor-confined operations below one local directory; see the module docstring."""

    __slots__ = ("root",)

    def __init__(self, root: str):
        check_platform()
        try:
            os.makedirs(root, exist_ok=True)
        except OSError as exc:
            raise NoeticConfigError(
                "INVALID_FS_ROOT",
                f"cannot create the filesystem root {root!r}: {exc.strerror}",
                hint="Point the root at a directory the process can create and write.",
            ) from None
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise NoeticConfigError(
                "INVALID_FS_ROOT",
                f"the filesystem root {root!r} is not a directory",
                hint="Point the root at a directory (it is created when missing).",
            )
        self.root = real

    def __repr__(self) -> str:
        return f"LocalTree({self.root!r})"

    # --- walking ------------------------------------------------------------------------------

    def _open_dir(self, rel: str, target: str, *, create: bool) -> int:
        """A descriptor of directory `rel` reached name by name without following links."""
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            raise fs_failure("open", target, f"the filesystem root is unavailable ({exc.strerror})") from None
        walked = ""
        try:
            for name in rel.split("/") if rel else ():
                walked = f"{walked}/{name}" if walked else name
                try:
                    child = self._enter(fd, name, walked, target)
                except FileNotFoundError:
                    if not create:
                        raise file_not_found(target) from None
                    with suppress(FileExistsError):  # another writer may have just created it
                        os.mkdir(name, dir_fd=fd)
                        os.fsync(fd)
                    child = self._enter(fd, name, walked, target)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _enter(self, fd: int, name: str, walked: str, target: str) -> int:
        """Open the directory `name` inside `fd`; a link or a file there is refused."""
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            raise self._blocked(fd, name, walked, target) from None

    def _blocked(self, fd: int, name: str, walked: str, target: str) -> NoeticError:
        """Why `name` (at `walked`) cannot be entered: a symlink, or not a directory."""
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if st.S_ISLNK(info.st_mode):
            return _symlink(target, walked)
        return not_a_directory(target, walked)

    @contextmanager
    def _parent(self, rel: str, *, create: bool) -> Iterator[tuple[int, str]]:
        """The open parent directory of `rel` and `rel`'s last name."""
        fd = self._open_dir(parent(rel), rel, create=create)
        try:
            yield fd, rel.rpartition("/")[2]
        finally:
            os.close(fd)

    def _lstat(self, fd: int, name: str, rel: str) -> os.stat_result | None:
        """The entry `name` in `fd` without following it; None when missing, PATH_ESCAPE for links."""
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if st.S_ISLNK(info.st_mode):
            raise _symlink(rel, rel)
        return info

    # --- the contract, blocking ---------------------------------------------------------------

    def read_bytes(self, rel: str) -> bytes:
        """The content of the regular file `rel`."""
        if not rel:
            raise is_a_directory(rel)
        with self._parent(rel, create=False) as (dfd, name):
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
            except OSError as exc:
                raise from_os_error("read", rel, exc) from None
        try:
            mode = os.fstat(fd).st_mode
            if st.S_ISDIR(mode):
                raise is_a_directory(rel)
            if not st.S_ISREG(mode):
                raise fs_failure("read", rel, "not a regular file")
            with open(fd, "rb", closefd=False) as handle:
                return handle.read()
        finally:
            os.close(fd)

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Atomically create or replace the file `rel` (temp file, fsync, replace, fsync dir)."""
        if not rel:
            raise is_a_directory(rel)
        with self._parent(rel, create=True) as (dfd, name):
            existing = self._lstat(dfd, name, rel)
            if existing is not None and st.S_ISDIR(existing.st_mode):
                raise is_a_directory(rel)
            if existing is not None and not st.S_ISREG(existing.st_mode):
                raise fs_failure("write", rel, "not a regular file")
            temp = f".noetic-{secrets.token_hex(8)}.tmp"
            fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=dfd)
            try:
                try:
                    if existing is not None:
                        os.fchmod(fd, st.S_IMODE(existing.st_mode))
                    with open(fd, "wb", closefd=False) as handle:
                        handle.write(data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                with suppress(OSError):  # already replaced or never created: nothing to clean
                    os.unlink(temp, dir_fd=dfd)
                raise
            os.fsync(dfd)

    def append_bytes(self, rel: str, data: bytes) -> None:
        """Append `data` to the file `rel`, creating it (and its parents) if missing."""
        if not rel:
            raise is_a_directory(rel)
        with self._parent(rel, create=True) as (dfd, name):
            try:
                fd = os.open(name, _APPEND_FLAGS, 0o666, dir_fd=dfd)
            except OSError as exc:
                raise from_os_error("append to", rel, exc) from None
        try:
            if not st.S_ISREG(os.fstat(fd).st_mode):
                raise fs_failure("append to", rel, "not a regular file")
            with open(fd, "ab", closefd=False) as handle:
                handle.write(data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def mkdir(self, rel: str, *, parents: bool, exist_ok: bool) -> None:
        """Create the directory `rel`."""
        if not rel:
            if exist_ok:
                return
            raise file_exists(rel)
        with self._parent(rel, create=parents) as (dfd, name):
            existing = self._lstat(dfd, name, rel)
            if existing is not None:
                if exist_ok and st.S_ISDIR(existing.st_mode):
                    return
                raise file_exists(rel)
            try:
                os.mkdir(name, dir_fd=dfd)
            except FileExistsError:
                if exist_ok and st.S_ISDIR(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                    return
                raise file_exists(rel) from None
            os.fsync(dfd)

    def remove(self, rel: str, *, recursive: bool) -> None:
        """Delete the file or directory `rel` (links inside a removed tree are unlinked, not followed)."""
        if not rel:
            raise fs_failure("remove", rel, "the root directory cannot be removed")
        with self._parent(rel, create=False) as (dfd, name):
            existing = self._lstat(dfd, name, rel)
            if existing is None:
                raise file_not_found(rel)
            try:
                if not st.S_ISDIR(existing.st_mode):
                    os.unlink(name, dir_fd=dfd)
                elif recursive:
                    _remove_tree(dfd, name)
                else:
                    os.rmdir(name, dir_fd=dfd)
            except OSError as exc:
                raise from_os_error("remove", rel, exc) from None
            os.fsync(dfd)

    def rename(self, source: str, target: str, *, overwrite: bool) -> None:
        """Move `source` to `target` (the contract's `rename`)."""
        if not source:
            raise fs_failure("rename", source, "the root directory cannot be moved")
        with self._parent(source, create=False) as (sfd, sname):
            moving = self._lstat(sfd, sname, source)
            if moving is None:
                raise file_not_found(source)
            if source == target:
                return
            if target.startswith(source + "/"):
                raise fs_failure("rename", source, f"a directory cannot be moved into itself ({target!r})")
            if not target:
                raise file_exists(target)
            # Parents are created only where they are missing, and then the target cannot
            # exist yet, so checking after the walk never leaves directories behind a refusal.
            with self._parent(target, create=True) as (tfd, tname):
                existing = self._lstat(tfd, tname, target)
                if existing is not None:
                    if not overwrite:
                        raise file_exists(target)
                    if st.S_ISDIR(existing.st_mode):
                        raise is_a_directory(target)
                    if st.S_ISDIR(moving.st_mode):
                        raise not_a_directory(target)
                try:
                    os.rename(sname, tname, src_dir_fd=sfd, dst_dir_fd=tfd)
                except OSError as exc:
                    raise from_os_error("rename", target, exc) from None
                os.fsync(tfd)
            os.fsync(sfd)

    def exists(self, rel: str) -> bool:
        """Whether `rel` exists (PATH_ESCAPE when a symlink is in the way)."""
        if not rel:
            return True
        try:
            with self._parent(rel, create=False) as (dfd, name):
                return self._lstat(dfd, name, rel) is not None
        except NoeticError as exc:
            if exc.code in ("FILE_NOT_FOUND", "NOT_A_DIRECTORY"):
                return False
            raise

    def stat(self, rel: str) -> FileStat:
        """Kind, size and modification time of `rel`."""
        if not rel:
            return FileStat(path="", kind="directory", modified=os.stat(self.root).st_mtime)
        with self._parent(rel, create=False) as (dfd, name):
            info = self._lstat(dfd, name, rel)
        if info is None:
            raise file_not_found(rel)
        return _file_stat(rel, info)

    def list_dir(self, rel: str) -> list[FileStat]:
        """Regular files and directories in `rel`, sorted; links and special files are left out."""
        fd = self._open_dir(rel, rel, create=False)
        try:
            found: list[FileStat] = []
            _scan(fd, rel, found)
        finally:
            os.close(fd)
        return sorted(found, key=lambda e: e.path)

    def walk(self, rel: str, max_depth: int | None) -> list[FileStat]:
        """What `list_dir` shows at every level below `rel`, down to `max_depth` levels (all when
        None), in one pass: depth first without recursion, each directory opened from the one
        above it without following links, at most `_HELD_DIRS` descriptors open. (Listing
        level by level walks from the root each time: a glob over a tree 3,000 levels deep took
        15 s.) A directory that turns into something else while the walk goes is skipped."""
        fd = self._open_dir(rel, rel, create=False)
        stack = _DirectoryStack(fd)
        found: list[FileStat] = []
        try:
            # pending[i]: the directories still to enter at level i (the stack holds i names)
            top_level = _scan(fd, rel, found)
            pending = [top_level if max_depth is None or max_depth > 1 else []]
            while pending:
                if not pending[-1]:
                    pending.pop()
                    if stack.names:
                        stack.pop()
                    continue
                name = pending[-1].pop()
                try:
                    stack.push(name)
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                        continue
                    raise
                here = "/".join([rel, *stack.names] if rel else stack.names)
                subdirectories = _scan(stack.top(), here, found)
                deeper = max_depth is None or len(stack.names) + 1 < max_depth
                pending.append(subdirectories if deeper else [])
        finally:
            stack.close()
            os.close(fd)
        return found


def _scan(fd: int, rel: str, found: list[FileStat]) -> list[str]:
    """Add the regular files and directories of the open directory `fd` (at `rel`) to `found`;
    returns the names of its directories."""
    prefix = f"{rel}/" if rel else ""
    directories: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if not _addressable(entry.name):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while listing
            if st.S_ISDIR(info.st_mode):
                directories.append(entry.name)
                found.append(_file_stat(prefix + entry.name, info))
            elif st.S_ISREG(info.st_mode):
                found.append(_file_stat(prefix + entry.name, info))
    return directories


#: The directory descriptors a tree removal keeps open at once; others are reopened by name.
_HELD_DIRS = 64


class _DirectoryStack:
    """The directories from a removal's top down to the one being emptied: their names, and
    descriptors for the innermost `_HELD_DIRS` of them at most. Climbing past the open ones
    reopens the next `_HELD_DIRS` by name from the nearest open ancestor (or the removal's
    parent), with the same no-follow flags, so a tree of depth d costs about d * d / 64 opens."""

    def __init__(self, parent_fd: int):
        self.parent_fd = parent_fd
        self.names: list[str] = []
        self.fds: list[int | None] = []
        self.held: deque[int] = deque()  # indices of open descriptors, outermost first

    def _open(self, index: int) -> None:
        base = self.fds[index - 1] if index else self.parent_fd
        self.fds[index] = os.open(self.names[index], _DIR_FLAGS, dir_fd=base)
        self.held.append(index)
        if len(self.held) > _HELD_DIRS:
            oldest = self.held.popleft()
            os.close(self.fds[oldest])  # type: ignore[arg-type]
            self.fds[oldest] = None

    def push(self, name: str) -> None:
        """Enter `name`, a directory inside the innermost one."""
        self.top()
        self.names.append(name)
        self.fds.append(None)
        self._open(len(self.fds) - 1)

    def pop(self) -> str:
        """Leave the innermost directory; returns its name."""
        fd = self.fds.pop()
        if fd is not None:
            os.close(fd)
            self.held.pop()
        return self.names.pop()

    def top(self) -> int:
        """A descriptor of the innermost directory (the removal's parent when there is none)."""
        if not self.fds:
            return self.parent_fd
        if self.fds[-1] is None:
            start = self.held[-1] + 1 if self.held else 0
            for index in range(start, len(self.fds)):
                self._open(index)
        fd = self.fds[-1]
        assert fd is not None
        return fd

    def close(self) -> None:
        """Close every descriptor still open."""
        while self.fds:
            self.pop()


def _remove_tree(parent_fd: int, name: str) -> None:
    """Remove directory `name` in `parent_fd` and everything under it; see the module docstring."""
    stack = _DirectoryStack(parent_fd)
    try:
        stack.push(name)
        while stack.names:
            fd = stack.top()
            subdirectory = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        subdirectory = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if subdirectory is not None:
                stack.push(subdirectory)
            else:
                emptied = stack.pop()
                os.rmdir(emptied, dir_fd=stack.top())
    finally:
        stack.close()


def _addressable(name: str) -> bool:
    """Whether the sandbox accepts `name` as one segment (so the entry can be used afterwards)."""
    try:
        return safe_path(name) == name
    except NoeticError:
        return False


def _file_stat(rel: str, info: os.stat_result) -> FileStat:
    if st.S_ISDIR(info.st_mode):
        return FileStat(path=rel, kind="directory", modified=info.st_mtime)
    if st.S_ISREG(info.st_mode):
        return FileStat(path=rel, kind="file", size=info.st_size, modified=info.st_mtime)
    raise fs_failure("stat", rel, "not a regular file or directory")


class ThreadedLocalTree:
    """A `LocalTree` whose blocking methods run in worker threads (`anyio.to_thread`)."""

    __slots__ = ("tree",)

    def __init__(self, tree: LocalTree):
        self.tree = tree

    async def read_bytes(self, rel: str) -> bytes:
        """See `LocalTree.read_bytes`."""
        return await to_thread.run_sync(self.tree.read_bytes, rel)

    async def write_bytes(self, rel: str, data: bytes) -> None:
        """See `LocalTree.write_bytes`."""
        await to_thread.run_sync(self.tree.write_bytes, rel, data)

    async def append_bytes(self, rel: str, data: bytes) -> None:
        """See `LocalTree.append_bytes`."""
        await to_thread.run_sync(self.tree.append_bytes, rel, data)

    async def mkdir(self, rel: str, *, parents: bool, exist_ok: bool) -> None:
        """See `LocalTree.mkdir`."""
        await to_thread.run_sync(partial(self.tree.mkdir, rel, parents=parents, exist_ok=exist_ok))

    async def remove(self, rel: str, *, recursive: bool) -> None:
        """See `LocalTree.remove`."""
        await to_thread.run_sync(partial(self.tree.remove, rel, recursive=recursive))

    async def rename(self, source: str, target: str, *, overwrite: bool) -> None:
        """See `LocalTree.rename`."""
        await to_thread.run_sync(partial(self.tree.rename, source, target, overwrite=overwrite))

    async def exists(self, rel: str) -> bool:
        """See `LocalTree.exists`."""
        return await to_thread.run_sync(self.tree.exists, rel)

    async def stat(self, rel: str) -> FileStat:
        """See `LocalTree.stat`."""
        return await to_thread.run_sync(self.tree.stat, rel)

    async def list_dir(self, rel: str) -> list[FileStat]:
        """See `LocalTree.list_dir`."""
        return await to_thread.run_sync(self.tree.list_dir, rel)

    async def walk(self, rel: str, max_depth: int | None) -> list[FileStat]:
        """See `LocalTree.walk`."""
        return await to_thread.run_sync(self.tree.walk, rel, max_depth)
