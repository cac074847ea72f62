"""`FsspecFs`: a Noetic filesystem adapter over any fsspec filesystem, confined to a root.

    FsspecFs("file:///srv/agent")                 # a local directory (created if missing)
    FsspecFs("memory://scratch")                  # fsspec's process-wide memory store, under /scratch
    FsspecFs("s3://bucket/agents", root="a1")     # an object store, below bucket/agents/a1
    FsspecFs(fsspec.filesystem("zip", fo="x.zip"), root="/")

A URL is opened with `fsspec.core.url_to_fs` (extra keyword arguments are its storage
options); its path is the root, and `root=` adds a relative directory below it. A filesystem
instance needs `root=`, a path in that filesystem. A `DirFileSystem` is unwrapped into its
target and prefix, because its own confinement is not enough (it follows symlinks and re-roots
absolute paths).

Every path first goes through `noetic.fs.paths.safe_path`. Then:

- a **local** disk (`LocalFileSystem`) is served by `LocalTree`, which walks from the root with
  descriptor-relative calls and `O_NOFOLLOW`, so symlinks (leaf or ancestor) never lead out
  (`PATH_ESCAPE`), and writes are atomic (temp file, fsync, `os.replace`, fsync the directory);
- **every other** backend is served by `FsspecTree` (no symlinks there, so the lexical check
  and a plain prefix are the whole sandbox), natively async on asyncio where fsspec allows.

A local disk hidden inside another wrapper (a cache over `file://`, say) is refused with
`INVALID_FS_ROOT`, since nothing could then stop its symlinks. Failures are `NoeticError`s with
the contract's codes; messages name root-relative paths and never the host root.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fsspec.core import url_to_fs
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.local import LocalFileSystem
from noetic.errors import NoeticConfigError, NoeticError
from noetic.fs.contract import FileStat, decode_text, encode_text
from noetic.fs.errors import from_os_error, fs_failure
from noetic.fs.glob import glob_paths
from noetic.fs.paths import safe_path

from noetic_fs_fsspec.local import LocalTree, ThreadedLocalTree
from noetic_fs_fsspec.tree import FsspecTree

__all__ = ["FsspecFs", "fsspec_fs_from_url"]

_MAX_DETAIL = 300


def _open_url(url: str, storage_options: dict[str, Any]) -> tuple[Any, str]:
    try:
        fs, path = url_to_fs(url, **storage_options)
    except (ImportError, ValueError) as exc:
        raise NoeticConfigError(
            "UNKNOWN_FILESYSTEM",
            f"fsspec cannot open {url.partition('://')[0]!r} URLs: {exc}",
            hint="Install the fsspec backend for that scheme (s3fs for s3://, gcsfs for gs://, …) "
            "or use file:// or memory://.",
        ) from None
    return fs, str(path)


def _join(base: str, sub: str) -> str:
    return f"{base.rstrip('/')}/{sub}" if sub else base


def _hides_local_disk(fs: Any) -> bool:
    """Whether a wrapper filesystem has a local disk somewhere below it."""
    inner = getattr(fs, "fs", None)
    seen = 0
    while inner is not None and seen < 16:
        if isinstance(inner, LocalFileSystem):
            return True
        inner = getattr(inner, "fs", None)
        seen += 1
    return False


class FsspecFs:
    """An `FsAdapter` over an fsspec filesystem; see the module docstring."""

    __slots__ = ("_driver", "_host_root", "protocol")

    def __init__(self, url_or_filesystem: Any, *, root: str | None = None, **storage_options: Any):
        from_url = isinstance(url_or_filesystem, str)
        if from_url:
            fs, base = _open_url(url_or_filesystem, storage_options)
            if root is not None:
                base = _join(base, safe_path(root))
        else:
            if storage_options:
                raise NoeticConfigError(
                    "INVALID_FS_ROOT",
                    "storage options only apply when FsspecFs opens a URL",
                    hint="Pass them to the fsspec filesystem you construct instead.",
                )
            if root is None:
                raise NoeticConfigError(
                    "INVALID_FS_ROOT",
                    f"FsspecFs over a {type(url_or_filesystem).__name__} instance needs root=",
                    hint="Pass root= with the directory the agent may use, e.g. root='/srv/agent'.",
                )
            fs, base = url_or_filesystem, root
        while isinstance(fs, DirFileSystem):
            base = _join(str(fs.path), base.lstrip("/"))
            fs = fs.fs
        protocol = fs.protocol
        self.protocol = protocol if isinstance(protocol, str) else str(protocol[0])
        self._driver: ThreadedLocalTree | FsspecTree
        if isinstance(fs, LocalFileSystem):
            tree = LocalTree(base)
            self._driver = ThreadedLocalTree(tree)
            self._host_root = tree.root
            return
        if _hides_local_disk(fs):
            raise NoeticConfigError(
                "INVALID_FS_ROOT",
                f"a {type(fs).__name__} wrapping a local disk cannot be confined (its symlinks "
                "would be followed)",
                hint="Use the local directory directly, e.g. fs='file:///srv/agent'.",
            )
        factory = None
        if from_url and getattr(fs, "async_impl", False) and not getattr(fs, "asynchronous", False):
            cls, options = type(fs), dict(fs.storage_options)

            def factory() -> Any:
                return cls(asynchronous=True, skip_instance_cache=True, **options)

        self._driver = FsspecTree(fs, base, async_factory=factory)
        self._host_root = base

    def __repr__(self) -> str:
        return f"FsspecFs({self.protocol!r}, root={self._host_root!r})"

    @property
    def root(self) -> str:
        """The root as a path in the underlying filesystem (the real path for local disks)."""
        return self._host_root

    @contextmanager
    def _errors(self, operation: str, rel: str) -> Iterator[None]:
        """Turn backend exceptions into contract errors that never show the host root."""
        try:
            yield
        except NoeticError:
            raise
        except OSError as exc:
            raise from_os_error(operation, rel, exc) from exc
        except Exception as exc:  # any other backend failure becomes FS_ERROR
            detail = f"{type(exc).__name__}: {exc}"
            if len(self._host_root) > 1:
                detail = detail.replace(self._host_root, "<root>")
            raise fs_failure(operation, rel, detail[:_MAX_DETAIL]) from exc

    # --- the contract -------------------------------------------------------------------------

    async def read_bytes(self, path: str) -> bytes:
        """The whole content of the file at `path`."""
        rel = safe_path(path)
        with self._errors("read", rel):
            return await self._driver.read_bytes(rel)

    async def read_text(self, path: str, *, encoding: str = "utf-8") -> str:
        """The content of the file at `path`, decoded."""
        rel = safe_path(path)
        return decode_text(await self.read_bytes(rel), rel, encoding)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace the file at `path` (atomically on local disks)."""
        rel = safe_path(path)
        with self._errors("write", rel):
            await self._driver.write_bytes(rel, bytes(data))

    async def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        """Create or replace the file at `path` with encoded `text`."""
        rel = safe_path(path)
        await self.write_bytes(rel, encode_text(text, rel, encoding))

    async def append_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        """Append encoded `text` to the file at `path`, creating it if missing."""
        rel = safe_path(path)
        data = encode_text(text, rel, encoding)
        with self._errors("append to", rel):
            await self._driver.append_bytes(rel, data)

    async def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False) -> None:
        """Create the directory `path` (`pathlib` semantics for `parents` and `exist_ok`)."""
        rel = safe_path(path)
        with self._errors("mkdir", rel):
            await self._driver.mkdir(rel, parents=parents, exist_ok=exist_ok)

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Delete the file or directory at `path` (a non-empty directory needs `recursive`)."""
        rel = safe_path(path)
        with self._errors("remove", rel):
            await self._driver.remove(rel, recursive=recursive)

    async def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        """Move the file or directory `src` to `dst` (see the contract for `overwrite`)."""
        source, target = safe_path(src), safe_path(dst)
        with self._errors("rename", source):
            await self._driver.rename(source, target, overwrite=overwrite)

    async def exists(self, path: str) -> bool:
        """Whether a file or directory exists at `path`."""
        rel = safe_path(path)
        with self._errors("check", rel):
            return await self._driver.exists(rel)

    async def stat(self, path: str) -> FileStat:
        """Kind, size and modification time of `path`."""
        rel = safe_path(path)
        with self._errors("stat", rel):
            return await self._driver.stat(rel)

    async def list_dir(self, path: str = "") -> list[FileStat]:
        """The entries of the directory `path`, sorted by name."""
        rel = safe_path(path)
        with self._errors("list", rel):
            return await self._driver.list_dir(rel)

    async def glob(self, pattern: str) -> list[str]:
        """Sorted relative paths matching `pattern` (see `noetic.fs.glob`); on a local disk the
        tree below the pattern's literal part is walked in one pass (`LocalTree.walk`)."""
        if isinstance(self._driver, ThreadedLocalTree):
            return await glob_paths(self, pattern, walk=self._walk)
        return await glob_paths(self, pattern)

    async def _walk(self, rel: str, max_depth: int | None) -> list[FileStat]:
        driver = self._driver
        assert isinstance(driver, ThreadedLocalTree)
        with self._errors("glob", rel):
            return await driver.walk(rel, max_depth)


def fsspec_fs_from_url(url: str) -> FsspecFs:
    """The registry factory: `FsspecFs(url)` for `file://`, `memory://` and any fsspec URL."""
    return FsspecFs(url)
