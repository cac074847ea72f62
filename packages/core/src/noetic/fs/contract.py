"""The filesystem adapter contract: what `ctx.fs` offers and how every backend behaves.

An `FsAdapter` is rooted at a directory it never leaves. Every path is relative to that root,
uses `/` as separator and goes through `noetic.fs.paths.safe_path` (so `..`, absolute paths,
`~`, URL and Unicode tricks raise `PATH_ESCAPE` before anything is touched); `""` and `"."` name
the root. Errors are `NoeticError`s built by `noetic.fs.errors`, naming the relative path.

Behaviour every adapter shares (checked by `noetic.testing.fs_conformance`):

- **Writes** (`write_bytes`, `write_text`, `append_text`) create missing parent directories,
  replace an existing file whole (atomically where the backend can), and fail with
  `IS_A_DIRECTORY` on a directory and `NOT_A_DIRECTORY` when an ancestor is a file.
- **Reads** fail with `FILE_NOT_FOUND`, `IS_A_DIRECTORY`, or `NOT_A_DIRECTORY` (an ancestor
  is a file). Text is UTF-8 unless `encoding=` says otherwise; undecodable bytes are `FS_ERROR`.
- **`mkdir`** follows `pathlib`: `parents=False` needs the parent (`FILE_NOT_FOUND`),
  `exist_ok=False` refuses an existing directory (`FILE_EXISTS`); an existing file is always
  `FILE_EXISTS`.
- **`remove`** deletes a file or an empty directory; a non-empty one needs `recursive=True`
  (else `DIRECTORY_NOT_EMPTY`). The root cannot be removed (`FS_ERROR`).
- **`rename`** moves a file or directory, creating the destination's parents. An existing
  destination is `FILE_EXISTS` unless `overwrite=True`, which replaces a file only (a
  directory destination is `IS_A_DIRECTORY`; a directory source over a file is
  `NOT_A_DIRECTORY`). Moving a directory into itself, or the root, is `FS_ERROR`.
- **`exists`** answers False for missing paths and paths under a file; it still raises
  `PATH_ESCAPE` for hostile paths, so a model learns the path is not allowed.
- **`list_dir`** returns the entries of a directory sorted by name. Entries a backend cannot
  address safely (symlinks, devices, names `safe_path` rejects) are left out.
- **`glob`** matches `*`, `?`, `[...]` within a name and `**` across directories, returning
  sorted relative paths of files and directories (`noetic.fs.glob.glob_paths` implements it
  over the other methods).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from noetic.fs.errors import fs_failure

__all__ = ["FileKind", "FileStat", "FsAdapter", "decode_text", "encode_text"]

FileKind = Literal["file", "directory"]


class FileStat(BaseModel):
    """What `stat` and `list_dir` report about one entry."""

    model_config = ConfigDict(frozen=True)

    path: str
    """The entry's path relative to the root (`""` for the root itself)."""
    kind: FileKind
    """`"file"` or `"directory"`."""
    size: int = 0
    """Size in bytes (0 for directories)."""
    modified: float | None = None
    """Last modification as a POSIX timestamp, when the backend knows it."""

    @property
    def name(self) -> str:
        """The last segment of `path` (`""` for the root)."""
        return self.path.rpartition("/")[2]

    @property
    def is_dir(self) -> bool:
        """True for a directory."""
        return self.kind == "directory"

    @property
    def is_file(self) -> bool:
        """True for a regular file."""
        return self.kind == "file"


@runtime_checkable
class FsAdapter(Protocol):
    """An async filesystem rooted at a directory it never leaves; see the module docstring."""

    async def read_bytes(self, path: str) -> bytes:
        """The whole content of the file at `path`."""
        ...

    async def read_text(self, path: str, *, encoding: str = "utf-8") -> str:
        """The content of the file at `path`, decoded."""
        ...

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace the file at `path` with `data`."""
        ...

    async def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        """Create or replace the file at `path` with encoded `text`."""
        ...

    async def append_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        """Append encoded `text` to the file at `path`, creating it if missing."""
        ...

    async def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False) -> None:
        """Create the directory `path`."""
        ...

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Delete the file or directory at `path`."""
        ...

    async def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        """Move the file or directory `src` to `dst`."""
        ...

    async def exists(self, path: str) -> bool:
        """Whether a file or directory exists at `path`."""
        ...

    async def stat(self, path: str) -> FileStat:
        """Kind, size and modification time of `path`."""
        ...

    async def list_dir(self, path: str = "") -> list[FileStat]:
        """The entries of the directory `path`, sorted by name."""
        ...

    async def glob(self, pattern: str) -> list[str]:
        """Sorted relative paths matching `pattern`."""
        ...


def decode_text(data: bytes, path: str, encoding: str) -> str:
    """`data` decoded for `read_text`; undecodable content is `FS_ERROR` naming the path."""
    try:
        return data.decode(encoding)
    except LookupError:
        raise fs_failure("read", path, f"unknown text encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        raise fs_failure(
            "read", path, f"the file is not valid {encoding} text (byte {exc.start}); read it as bytes"
        ) from None


def encode_text(text: str, path: str, encoding: str) -> bytes:
    """`text` encoded for a text write; unencodable text is `FS_ERROR` naming the path."""
    try:
        return text.encode(encoding)
    except LookupError:
        raise fs_failure("write", path, f"unknown text encoding {encoding!r}") from None
    except UnicodeEncodeError as exc:
        raise fs_failure(
            "write", path, f"the text cannot be encoded as {encoding} (character {exc.start})"
        ) from None
