"""The errors every filesystem adapter raises, worded the same way on every backend.

Each is a `NoeticError` whose `code` is one of `FILE_NOT_FOUND`, `FILE_EXISTS`,
`NOT_A_DIRECTORY`, `IS_A_DIRECTORY`, `DIRECTORY_NOT_EMPTY`, `PATH_ESCAPE` or `FS_ERROR`, whose
message names the offending path *relative to the adapter's root* (the root itself shows as
`'.'`), and whose `.path` detail holds that same relative path. Host paths never appear, so an
error can be shown to a model without leaking where the sandbox lives.
"""

from __future__ import annotations

import errno

from noetic.errors import NoeticError

__all__ = [
    "directory_not_empty",
    "file_exists",
    "file_not_found",
    "from_os_error",
    "fs_failure",
    "is_a_directory",
    "not_a_directory",
    "path_escape",
    "shown",
]

_MAX_SHOWN = 200


def shown(path: str) -> str:
    """A path as it appears in messages: quoted, escaped, `'.'` for the root, long ones cut."""
    text = path if path else "."
    if len(text) > _MAX_SHOWN:
        text = text[:_MAX_SHOWN] + "…"
    return repr(text)


def file_not_found(path: str) -> NoeticError:
    """`FILE_NOT_FOUND`: nothing exists at `path`."""
    return NoeticError("FILE_NOT_FOUND", f"no such file or directory: {shown(path)}", path=path)


def file_exists(path: str) -> NoeticError:
    """`FILE_EXISTS`: something already exists at `path` and the operation will not replace it."""
    return NoeticError(
        "FILE_EXISTS",
        f"{shown(path)} already exists; choose another name or remove it first",
        path=path,
    )


def not_a_directory(path: str, blocker: str | None = None) -> NoeticError:
    """`NOT_A_DIRECTORY`: `path` (or its ancestor `blocker`) is a file where a directory is needed."""
    where = shown(path) if blocker is None or blocker == path else f"{shown(blocker)} (in {shown(path)})"
    return NoeticError("NOT_A_DIRECTORY", f"{where} is a file, not a directory", path=path)


def is_a_directory(path: str) -> NoeticError:
    """`IS_A_DIRECTORY`: `path` is a directory where a file is needed."""
    return NoeticError("IS_A_DIRECTORY", f"{shown(path)} is a directory, not a file", path=path)


def directory_not_empty(path: str) -> NoeticError:
    """`DIRECTORY_NOT_EMPTY`: removing a directory that still has entries."""
    return NoeticError(
        "DIRECTORY_NOT_EMPTY",
        f"directory {shown(path)} is not empty; pass recursive=True to remove it with its contents",
        path=path,
    )


def path_escape(path: str, reason: str) -> NoeticError:
    """`PATH_ESCAPE`: `path` would leave the root (or cannot be proven to stay inside it)."""
    return NoeticError(
        "PATH_ESCAPE",
        f"path {shown(path)} is not allowed: {reason}; use a plain path relative to the "
        "filesystem root, such as 'notes/todo.md'",
        path=path,
        reason=reason,
    )


def fs_failure(operation: str, path: str, detail: str) -> NoeticError:
    """`FS_ERROR`: any other failure of `operation` on `path`, with what went wrong."""
    return NoeticError(
        "FS_ERROR", f"{operation} {shown(path)} failed: {detail}", path=path, operation=operation
    )


def from_os_error(operation: str, path: str, exc: OSError) -> NoeticError:
    """The contract error for an `OSError` raised while doing `operation` on `path`.

    The OS message is kept (`strerror`) but never the filename the OS reports, which may be
    a host path; a symlink loop (`ELOOP`, what `O_NOFOLLOW` gives for a link) is `PATH_ESCAPE`.
    """
    if isinstance(exc, FileNotFoundError):
        return file_not_found(path)
    if isinstance(exc, FileExistsError):
        return file_exists(path)
    if isinstance(exc, NotADirectoryError):
        return not_a_directory(path)
    if isinstance(exc, IsADirectoryError):
        return is_a_directory(path)
    if exc.errno == errno.ENOTEMPTY:
        return directory_not_empty(path)
    if exc.errno == errno.ELOOP:
        return path_escape(path, "it is a symbolic link, and links are never followed")
    return fs_failure(operation, path, exc.strerror or type(exc).__name__)
