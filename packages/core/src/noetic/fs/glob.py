"""`glob_paths`: pattern matching over any `FsAdapter`, built from `exists`, `stat` and `list_dir`.

Patterns are root-relative paths (checked by `safe_path`) whose segments may use `*`, `?` and
`[...]` (matched case-sensitively within one name, dot-files included) and `**` (any number of
whole directories, including none). Only directories the pattern can still match below are
listed, so `src/*.py` reads one directory and `**/x` walks the tree. The walk goes through
`list_dir`, so it never enters what an adapter leaves out of listings (symlinks on local disks).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from noetic.fs.paths import safe_path

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from noetic.fs.contract import FileStat, FsAdapter

    Walk = Callable[[str, "int | None"], Awaitable[list[FileStat]]]

__all__ = ["glob_paths", "matches"]

_MAGIC = frozenset("*?[")


def _is_magic(segment: str) -> bool:
    return any(char in _MAGIC for char in segment)


def matches(pattern: list[str], parts: list[str]) -> bool:
    """Whether path segments `parts` match pattern segments `pattern` (`**` spans segments)."""
    # Cheap answers first: the matching below costs pattern x path length, which adds up over
    # the entries of a deep tree.
    if pattern == ["**"]:
        return True
    last = pattern[-1] if pattern else None
    if last is not None and last != "**" and not (parts and fnmatchcase(parts[-1], last)):
        return False
    # reachable[j]: the first i pattern segments can match the first j path segments.
    reachable = [True] + [False] * len(parts)
    for segment in pattern:
        nxt = [False] * (len(parts) + 1)
        if segment == "**":
            seen = False
            for j in range(len(parts) + 1):
                seen = seen or reachable[j]
                nxt[j] = seen
        else:
            for j in range(len(parts)):
                if reachable[j] and fnmatchcase(parts[j], segment):
                    nxt[j + 1] = True
        reachable = nxt
    return reachable[-1]


async def glob_paths(fs: FsAdapter, pattern: str, *, walk: Walk | None = None) -> list[str]:
    """The sorted root-relative paths of files and directories in `fs` matching `pattern`.

    An adapter that can list a whole subtree in one pass passes it as `walk(base, max_depth)`:
    every entry below `base` down to `max_depth` levels (all when None), as `list_dir` would
    show them; otherwise the tree is listed directory by directory."""
    rel = safe_path(pattern)
    if not rel:
        return []
    segments = rel.split("/")
    literal = 0
    while literal < len(segments) and not _is_magic(segments[literal]):
        literal += 1
    if literal == len(segments):
        return [rel] if await fs.exists(rel) else []
    base = "/".join(segments[:literal])
    if not await fs.exists(base) or not (await fs.stat(base)).is_dir:
        return []
    rest = segments[literal:]
    max_depth = None if "**" in rest else len(rest)
    if walk is not None:
        entries = await walk(base, max_depth)
        return sorted(e.path for e in entries if matches(rest, e.path.split("/")[literal:]))
    found: list[str] = []
    pending: list[tuple[str, int]] = [(base, 0)]
    while pending:
        directory, depth = pending.pop()
        for entry in await fs.list_dir(directory):
            parts = entry.path.split("/")[literal:]
            if matches(rest, parts):
                found.append(entry.path)
            if entry.is_dir and (max_depth is None or depth + 1 < max_depth):
                pending.append((entry.path, depth + 1))
    return sorted(found)
