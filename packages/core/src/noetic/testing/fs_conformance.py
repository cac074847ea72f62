"""`FsConformance`: the pytest suite every filesystem adapter must pass.

Adopt it for your own backend in three lines — subclass it and override the `fs` fixture with
one that returns a fresh, empty adapter (a plain or async fixture):

    from noetic.testing.fs_conformance import FsConformance

    class TestMyFs(FsConformance):
        @pytest.fixture
        def fs(self, tmp_path): return MyFs(tmp_path)

The tests are `@pytest.mark.anyio` coroutines, so they run on whatever `anyio_backend` your
conftest selects (Noetic's own suite runs asyncio and trio). They check the behaviour written
down in `noetic.fs.contract` — every method, every error code, paths in messages — and that
the hostile paths in `HOSTILE_PATHS` are refused with `PATH_ESCAPE` by every operation
without changing anything. Backend-specific escapes (symlinks on local disks) need tests of
their own; see `tests/fs_fsspec` in the Noetic repository.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from noetic.errors import NoeticError
from noetic.fs.contract import FsAdapter

__all__ = ["HOSTILE_PATHS", "FsConformance"]

#: Paths every adapter must refuse with `PATH_ESCAPE` (`noetic.fs.paths` explains each rule).
HOSTILE_PATHS: tuple[str, ...] = (
    "..",
    "../outside.txt",
    "a/../../outside.txt",
    "a/b/../../../outside.txt",
    "/etc/passwd",
    "//server/share/x",
    "C:/Windows/x",
    "c:outside.txt",
    "~/outside.txt",
    "~root/x",
    "a\\..\\..\\outside.txt",
    "a\x00b",
    "a/\n/b",
    "file:///etc/passwd",
    "memory://other/x",
    "s3://bucket/key",
    "simplecache::file:///etc/passwd",
    "a.txt:stream",
    "%2e%2e/outside.txt",
    "%2E%2E%2Foutside.txt",
    "a%2f..%2f..%2foutside.txt",
    "a%00b",
    "\uff0e\uff0e/outside.txt",  # fullwidth full stops
    "\u2025/outside.txt",  # two dot leader
    "\u2024\u2024/outside.txt",  # one dot leaders
    "a\u2215..\u2215outside.txt",  # division slash
    "a\u2044b",  # fraction slash
    "a\uff0f..\uff0foutside.txt",  # fullwidth solidus
    "a\uff3cb",  # fullwidth reverse solidus
    "..\u200b/outside.txt",  # zero-width space
    "a\u202eb",  # right-to-left override
    "...",
    ". .",
    "\ufe52\ufe52/outside.txt",  # small full stops
)


async def _fails(code: str, awaitable: Awaitable[Any]) -> NoeticError:
    with pytest.raises(NoeticError) as info:
        await awaitable
    assert info.value.code == code, f"expected {code}, got {info.value!r}"
    return info.value


class FsConformance:
    """The shared `FsAdapter` checks; subclass and override `fs` (see the module docstring)."""

    @pytest.fixture
    def fs(self) -> FsAdapter:
        """A fresh, empty adapter; subclasses must override this fixture."""
        raise NotImplementedError("override the `fs` fixture to return the adapter under test")

    # --- writing and reading ------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_bytes_round_trip(self, fs: FsAdapter) -> None:
        """Bytes come back exactly, including NUL bytes and empty files."""
        payload = bytes(range(256)) * 3
        await fs.write_bytes("blob.bin", payload)
        await fs.write_bytes("empty.bin", b"")
        assert await fs.read_bytes("blob.bin") == payload
        assert await fs.read_bytes("empty.bin") == b""

    @pytest.mark.anyio
    async def test_text_round_trip(self, fs: FsAdapter) -> None:
        """Text is UTF-8 by default and another encoding on request."""
        await fs.write_text("notes.md", "héllo — 世界\n")
        assert await fs.read_text("notes.md") == "héllo — 世界\n"
        assert await fs.read_bytes("notes.md") == "héllo — 世界\n".encode()
        await fs.write_text("latin.txt", "café", encoding="latin-1")
        assert await fs.read_bytes("latin.txt") == b"caf\xe9"
        assert await fs.read_text("latin.txt", encoding="latin-1") == "café"

    @pytest.mark.anyio
    async def test_write_replaces_the_whole_file(self, fs: FsAdapter) -> None:
        """A shorter write leaves nothing of the longer content behind."""
        await fs.write_text("f.txt", "a long first version")
        await fs.write_text("f.txt", "short")
        assert await fs.read_text("f.txt") == "short"

    @pytest.mark.anyio
    async def test_write_creates_parent_directories(self, fs: FsAdapter) -> None:
        """Writes create every missing parent directory."""
        await fs.write_text("a/b/c/deep.txt", "x")
        assert (await fs.stat("a")).is_dir
        assert (await fs.stat("a/b/c")).is_dir
        assert await fs.read_text("a/b/c/deep.txt") == "x"

    @pytest.mark.anyio
    async def test_write_errors(self, fs: FsAdapter) -> None:
        """Writing onto a directory or the root is IS_A_DIRECTORY; below a file, NOT_A_DIRECTORY."""
        await fs.mkdir("dir")
        await fs.write_text("file.txt", "x")
        await _fails("IS_A_DIRECTORY", fs.write_text("dir", "x"))
        await _fails("IS_A_DIRECTORY", fs.write_bytes("", b"x"))
        await _fails("NOT_A_DIRECTORY", fs.write_text("file.txt/child.txt", "x"))
        await _fails("NOT_A_DIRECTORY", fs.write_text("file.txt/a/b.txt", "x"))
        assert await fs.read_text("file.txt") == "x"

    @pytest.mark.anyio
    async def test_append_creates_then_appends(self, fs: FsAdapter) -> None:
        """`append_text` creates a missing file (and its parents) and then adds to its end."""
        await fs.append_text("logs/run.log", "one\n")
        await fs.append_text("logs/run.log", "two\n")
        assert await fs.read_text("logs/run.log") == "one\ntwo\n"
        await fs.mkdir("d")
        await _fails("IS_A_DIRECTORY", fs.append_text("d", "x"))
        await _fails("NOT_A_DIRECTORY", fs.append_text("logs/run.log/x", "x"))

    @pytest.mark.anyio
    async def test_concurrent_appends_keep_every_line(self, fs: FsAdapter) -> None:
        """Appends racing on one file lose nothing."""

        async def add(i: int) -> None:
            await fs.append_text("shared.log", f"line {i}\n")

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(add, i)
        lines = (await fs.read_text("shared.log")).splitlines()
        assert sorted(lines) == sorted(f"line {i}" for i in range(20))

    @pytest.mark.anyio
    async def test_read_errors(self, fs: FsAdapter) -> None:
        """Reads of a missing path, a directory, or a path below a file fail with their codes."""
        await fs.mkdir("dir")
        await fs.write_text("file.txt", "x")
        await _fails("FILE_NOT_FOUND", fs.read_bytes("missing.txt"))
        await _fails("FILE_NOT_FOUND", fs.read_text("dir/missing.txt"))
        await _fails("FILE_NOT_FOUND", fs.read_text("nodir/missing.txt"))
        await _fails("IS_A_DIRECTORY", fs.read_bytes("dir"))
        await _fails("IS_A_DIRECTORY", fs.read_text(""))
        await _fails("NOT_A_DIRECTORY", fs.read_bytes("file.txt/child"))

    @pytest.mark.anyio
    async def test_undecodable_text_is_fs_error(self, fs: FsAdapter) -> None:
        """Bytes that are not valid text in the encoding are FS_ERROR naming the path."""
        await fs.write_bytes("bin.dat", b"\xff\xfe\x00bad")
        error = await _fails("FS_ERROR", fs.read_text("bin.dat"))
        assert "bin.dat" in error.message

    # --- directories --------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_mkdir(self, fs: FsAdapter) -> None:
        """`mkdir` creates an empty directory that `stat`, `exists` and `list_dir` see."""
        await fs.mkdir("new")
        assert await fs.exists("new")
        assert (await fs.stat("new")).kind == "directory"
        assert await fs.list_dir("new") == []
        assert [e.name for e in await fs.list_dir("")] == ["new"]

    @pytest.mark.anyio
    async def test_mkdir_existing(self, fs: FsAdapter) -> None:
        """An existing directory is FILE_EXISTS unless exist_ok; an existing file always is."""
        await fs.mkdir("d")
        await _fails("FILE_EXISTS", fs.mkdir("d"))
        await fs.mkdir("d", exist_ok=True)
        await fs.mkdir("", exist_ok=True)
        await _fails("FILE_EXISTS", fs.mkdir(""))
        await fs.write_text("f.txt", "x")
        await _fails("FILE_EXISTS", fs.mkdir("f.txt"))
        await _fails("FILE_EXISTS", fs.mkdir("f.txt", exist_ok=True))
        assert await fs.read_text("f.txt") == "x"

    @pytest.mark.anyio
    async def test_mkdir_parents(self, fs: FsAdapter) -> None:
        """A missing parent is FILE_NOT_FOUND unless parents=True; a file parent is NOT_A_DIRECTORY."""
        await _fails("FILE_NOT_FOUND", fs.mkdir("x/y/z"))
        assert not await fs.exists("x")
        await fs.mkdir("x/y/z", parents=True)
        assert (await fs.stat("x/y")).is_dir
        await fs.write_text("f.txt", "x")
        await _fails("NOT_A_DIRECTORY", fs.mkdir("f.txt/sub", parents=True))

    # --- removing -----------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_remove_file_and_empty_directory(self, fs: FsAdapter) -> None:
        """Files and empty directories go without `recursive`."""
        await fs.write_text("f.txt", "x")
        await fs.mkdir("empty")
        await fs.remove("f.txt")
        await fs.remove("empty")
        assert not await fs.exists("f.txt")
        assert not await fs.exists("empty")

    @pytest.mark.anyio
    async def test_remove_non_empty_directory(self, fs: FsAdapter) -> None:
        """A non-empty directory is DIRECTORY_NOT_EMPTY (untouched) until recursive=True."""
        await fs.write_text("tree/a.txt", "a")
        await fs.write_text("tree/sub/b.txt", "b")
        await _fails("DIRECTORY_NOT_EMPTY", fs.remove("tree"))
        assert await fs.read_text("tree/sub/b.txt") == "b"
        await fs.remove("tree", recursive=True)
        assert not await fs.exists("tree")
        assert not await fs.exists("tree/sub/b.txt")

    @pytest.mark.anyio
    async def test_remove_errors(self, fs: FsAdapter) -> None:
        """Missing paths are FILE_NOT_FOUND; the root cannot be removed (FS_ERROR)."""
        await fs.write_text("keep.txt", "x")
        await _fails("FILE_NOT_FOUND", fs.remove("missing"))
        await _fails("FS_ERROR", fs.remove(""))
        await _fails("FS_ERROR", fs.remove(".", recursive=True))
        assert await fs.read_text("keep.txt") == "x"

    # --- renaming -----------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_rename_file(self, fs: FsAdapter) -> None:
        """A renamed file keeps its content, leaves its old path, and gets missing parents."""
        await fs.write_text("old.txt", "content")
        await fs.rename("old.txt", "moved/deeper/new.txt")
        assert not await fs.exists("old.txt")
        assert await fs.read_text("moved/deeper/new.txt") == "content"

    @pytest.mark.anyio
    async def test_rename_directory(self, fs: FsAdapter) -> None:
        """A renamed directory takes its whole subtree along."""
        await fs.write_text("src/a.txt", "a")
        await fs.write_text("src/sub/b.txt", "b")
        await fs.rename("src", "dst")
        assert not await fs.exists("src")
        assert await fs.read_text("dst/a.txt") == "a"
        assert await fs.read_text("dst/sub/b.txt") == "b"

    @pytest.mark.anyio
    async def test_rename_existing_destination(self, fs: FsAdapter) -> None:
        """An existing destination needs overwrite=True, which replaces files only."""
        await fs.write_text("a.txt", "a")
        await fs.write_text("b.txt", "b")
        await fs.mkdir("dir")
        await fs.mkdir("dir2")
        await _fails("FILE_EXISTS", fs.rename("a.txt", "b.txt"))
        assert await fs.read_text("b.txt") == "b"
        await _fails("IS_A_DIRECTORY", fs.rename("a.txt", "dir", overwrite=True))
        await _fails("NOT_A_DIRECTORY", fs.rename("dir", "b.txt", overwrite=True))
        await _fails("FILE_EXISTS", fs.rename("dir", "dir2"))
        await fs.rename("a.txt", "b.txt", overwrite=True)
        assert await fs.read_text("b.txt") == "a"
        assert not await fs.exists("a.txt")

    @pytest.mark.anyio
    async def test_rename_errors(self, fs: FsAdapter) -> None:
        """Missing sources, the root, and moving a directory into itself are refused."""
        await fs.write_text("d/f.txt", "x")
        await fs.write_text("e.txt", "e")
        await _fails("FILE_NOT_FOUND", fs.rename("missing", "x"))
        await _fails("FS_ERROR", fs.rename("", "elsewhere"))
        await _fails("FS_ERROR", fs.rename("d", "d/inner"))
        await _fails("NOT_A_DIRECTORY", fs.rename("e.txt", "d/f.txt/inner"))
        assert await fs.read_text("e.txt") == "e"
        await fs.rename("d/f.txt", "d/f.txt")
        assert await fs.read_text("d/f.txt") == "x"

    # --- inspecting ---------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_exists(self, fs: FsAdapter) -> None:
        """True for files, directories and the root; False for missing paths and paths below a file."""
        await fs.write_text("d/f.txt", "x")
        assert await fs.exists("d/f.txt")
        assert await fs.exists("d")
        assert await fs.exists("")
        assert await fs.exists(".")
        assert not await fs.exists("d/missing")
        assert not await fs.exists("d/f.txt/below")

    @pytest.mark.anyio
    async def test_stat(self, fs: FsAdapter) -> None:
        """Kind, size and root-relative path of files, directories and the root."""
        await fs.write_bytes("d/f.bin", b"12345")
        info = await fs.stat("d/f.bin")
        assert (info.path, info.name, info.kind, info.size) == ("d/f.bin", "f.bin", "file", 5)
        assert info.modified is None or info.modified > 0
        folder = await fs.stat("./d/")
        assert (folder.path, folder.kind) == ("d", "directory")
        root = await fs.stat("")
        assert (root.path, root.kind) == ("", "directory")
        await _fails("FILE_NOT_FOUND", fs.stat("d/missing"))
        await _fails("NOT_A_DIRECTORY", fs.stat("d/f.bin/below"))

    @pytest.mark.anyio
    async def test_list_dir(self, fs: FsAdapter) -> None:
        """Entries sorted by name, with kinds, sizes and root-relative paths; nothing deeper."""
        await fs.write_text("d/b.txt", "bb")
        await fs.write_text("d/a.txt", "a")
        await fs.write_text("d/sub/deep.txt", "x")
        entries = await fs.list_dir("d")
        assert [(e.path, e.kind) for e in entries] == [
            ("d/a.txt", "file"),
            ("d/b.txt", "file"),
            ("d/sub", "directory"),
        ]
        assert [e.size for e in entries[:2]] == [1, 2]
        assert [e.name for e in await fs.list_dir()] == ["d"]
        assert [e.name for e in await fs.list_dir(".")] == ["d"]

    @pytest.mark.anyio
    async def test_list_dir_errors(self, fs: FsAdapter) -> None:
        """A missing directory is FILE_NOT_FOUND; a file is NOT_A_DIRECTORY."""
        await fs.write_text("f.txt", "x")
        await _fails("FILE_NOT_FOUND", fs.list_dir("missing"))
        await _fails("NOT_A_DIRECTORY", fs.list_dir("f.txt"))

    @pytest.mark.anyio
    async def test_glob(self, fs: FsAdapter) -> None:
        """`*`, `?` and `[...]` match within a name, `**` across directories."""
        for path in ("a.py", "b.py", "c.txt", "pkg/x.py", "pkg/sub/y.py", "pkg/sub/z.md"):
            await fs.write_text(path, "x")
        assert await fs.glob("*.py") == ["a.py", "b.py"]
        assert await fs.glob("?.txt") == ["c.txt"]
        assert await fs.glob("[ab].py") == ["a.py", "b.py"]
        assert await fs.glob("pkg/*") == ["pkg/sub", "pkg/x.py"]
        assert await fs.glob("**/*.py") == ["a.py", "b.py", "pkg/sub/y.py", "pkg/x.py"]
        assert await fs.glob("pkg/**/*.md") == ["pkg/sub/z.md"]
        assert await fs.glob("c.txt") == ["c.txt"]
        assert await fs.glob("nothing/*") == []
        await _fails("PATH_ESCAPE", fs.glob("../*"))

    # --- paths and messages -------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_equivalent_spellings(self, fs: FsAdapter) -> None:
        """`./`, doubled and trailing slashes name the same entry."""
        await fs.write_text("./a//b.txt", "x")
        assert await fs.read_text("a/b.txt") == "x"
        assert (await fs.stat("a/./b.txt")).path == "a/b.txt"

    @pytest.mark.anyio
    async def test_errors_name_the_relative_path(self, fs: FsAdapter) -> None:
        """Messages and the `.path` detail carry the root-relative path."""
        error = await _fails("FILE_NOT_FOUND", fs.read_text("./missing/x.txt"))
        assert "'missing/x.txt'" in error.message
        assert error.details["path"] == "missing/x.txt"

    @pytest.mark.anyio
    @pytest.mark.parametrize("hostile", HOSTILE_PATHS)
    async def test_hostile_paths_are_refused_everywhere(self, fs: FsAdapter, hostile: str) -> None:
        """Every operation refuses a hostile path with PATH_ESCAPE and changes nothing."""
        await fs.write_text("inside/keep.txt", "keep")
        operations: dict[str, Callable[[], Awaitable[Any]]] = {
            "read_bytes": lambda: fs.read_bytes(hostile),
            "read_text": lambda: fs.read_text(hostile),
            "write_bytes": lambda: fs.write_bytes(hostile, b"x"),
            "write_text": lambda: fs.write_text(hostile, "x"),
            "append_text": lambda: fs.append_text(hostile, "x"),
            "mkdir": lambda: fs.mkdir(hostile, parents=True, exist_ok=True),
            "remove": lambda: fs.remove(hostile, recursive=True),
            "rename from": lambda: fs.rename(hostile, "inside/moved.txt", overwrite=True),
            "rename to": lambda: fs.rename("inside/keep.txt", hostile, overwrite=True),
            "exists": lambda: fs.exists(hostile),
            "stat": lambda: fs.stat(hostile),
            "list_dir": lambda: fs.list_dir(hostile),
            "glob": lambda: fs.glob(hostile),
        }
        for name, operation in operations.items():
            with pytest.raises(NoeticError) as info:
                await operation()
            assert info.value.code == "PATH_ESCAPE", f"{name}({hostile!r}) raised {info.value!r}"
        assert await fs.glob("**") == ["inside", "inside/keep.txt"]
        assert await fs.read_text("inside/keep.txt") == "keep"
