"""The local sandbox holds against a real symlink farm (reliability.md §3.1, issue 8).

The farm puts links inside the root that point out of it — to a file, to a directory, to `/`,
to a missing target, through a relative `..` chain, in a loop — plus links that point back
inside. Sentinel files live outside the root. Every operation through any link is
`PATH_ESCAPE`; listings and glob never show the links; and after everything, including
hypothesis-generated hostile paths, nothing outside the root was read, written or listed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from noetic.errors import NoeticError
from noetic_fs_fsspec.adapter import FsspecFs

SECRET = "SECRET-OUTSIDE-THE-ROOT"


@dataclass
class Farm:
    """A root full of escaping symlinks, and the directory outside it."""

    base: Path
    root: Path
    outside: Path

    def snapshot(self) -> dict[str, tuple[str, bytes | str, int]]:
        """Every entry under `base` except the root's contents: kind, content or link target,
        and modification time — enough to see anything written, created, removed or touched."""
        seen: dict[str, tuple[str, bytes | str, int]] = {}
        for dirpath, dirnames, filenames in os.walk(self.base, followlinks=False):
            here = Path(dirpath)
            if here == self.root or self.root in here.parents:
                dirnames.clear()
                continue
            for name in [*dirnames, *filenames]:
                path = here / name
                if path == self.root:
                    continue
                info = path.lstat()
                if path.is_symlink():
                    seen[str(path)] = ("link", os.readlink(path), info.st_mtime_ns)
                elif path.is_dir():
                    seen[str(path)] = ("dir", "", info.st_mtime_ns)
                else:
                    seen[str(path)] = ("file", path.read_bytes(), info.st_mtime_ns)
        seen[str(self.outside)] = ("dir", "", self.outside.lstat().st_mtime_ns)
        return seen


def build_root(root: Path, outside: Path) -> None:
    """(Re)create the root: two ordinary files and a link of every kind."""
    if root.exists():
        shutil.rmtree(root)  # never follows links
    (root / "sub").mkdir(parents=True)
    (root / "real.txt").write_text("real")
    (root / "sub" / "ok.txt").write_text("ok")
    links = {
        "leak.txt": outside / "secret.txt",
        "leakdir": outside,
        "sub/deeper": Path("../../outside"),
        "dangling": outside / "created-through-link.txt",
        "dangling_dir": outside / "new-dir",
        "abs": Path("/"),
        "loop": Path("loop"),
        "inside_link": root / "real.txt",
        "dirlink_inside": root / "sub",
    }
    for name, target in links.items():
        (root / name).symlink_to(target)


@pytest.fixture
def farm(tmp_path: Path) -> Farm:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    (outside / "dir" / "inner.txt").write_text(SECRET)
    build_root(tmp_path / "root", outside)
    return Farm(tmp_path, tmp_path / "root", outside)


THROUGH_LINKS = (
    "leak.txt",
    "leakdir",
    "leakdir/secret.txt",
    "leakdir/dir/inner.txt",
    "leakdir/new.txt",
    "sub/deeper",
    "sub/deeper/secret.txt",
    "sub/deeper/dir",
    "dangling",
    "dangling_dir/x.txt",
    "abs",
    "abs/etc/passwd",
    "loop",
    "loop/x",
    "inside_link",
    "dirlink_inside/ok.txt",
)


def _operations(fs: FsspecFs, path: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    return {
        "read_bytes": lambda: fs.read_bytes(path),
        "read_text": lambda: fs.read_text(path),
        "write_bytes": lambda: fs.write_bytes(path, b"pwned"),
        "write_text": lambda: fs.write_text(path, "pwned"),
        "append_text": lambda: fs.append_text(path, "pwned"),
        "mkdir": lambda: fs.mkdir(path, parents=True, exist_ok=True),
        "mkdir child": lambda: fs.mkdir(f"{path}/child", parents=True),
        "remove": lambda: fs.remove(path),
        "remove recursive": lambda: fs.remove(path, recursive=True),
        "rename from": lambda: fs.rename(path, "moved", overwrite=True),
        "rename onto": lambda: fs.rename("real.txt", path, overwrite=True),
        "rename into": lambda: fs.rename("real.txt", f"{path}/moved.txt"),
        "exists": lambda: fs.exists(path),
        "stat": lambda: fs.stat(path),
        "list_dir": lambda: fs.list_dir(path),
    }


@pytest.mark.anyio
@pytest.mark.parametrize("path", THROUGH_LINKS)
async def test_every_operation_through_a_symlink_is_path_escape(farm: Farm, path: str) -> None:
    """Leaf and ancestor links, pointing out or back in, are refused by every operation, and
    neither the outside nor the root changes."""
    fs = FsspecFs(f"file://{farm.root}")
    before = farm.snapshot()
    for name, operation in _operations(fs, path).items():
        with pytest.raises(NoeticError) as info:
            await operation()
        assert info.value.code == "PATH_ESCAPE", f"{name}({path!r}) raised {info.value!r}"
        assert "symbolic link" in info.value.message
        assert str(farm.base) not in info.value.message
    assert farm.snapshot() == before
    assert (farm.root / "real.txt").read_text() == "real"
    assert not (farm.root / "moved").exists()


@pytest.mark.anyio
async def test_listings_and_glob_leave_links_out(farm: Farm) -> None:
    """Links are invisible to list_dir and glob, so a walk never steps outside."""
    fs = FsspecFs(f"file://{farm.root}")
    assert [e.name for e in await fs.list_dir()] == ["real.txt", "sub"]
    assert [e.name for e in await fs.list_dir("sub")] == ["ok.txt"]
    assert await fs.glob("**") == ["real.txt", "sub", "sub/ok.txt"]
    assert await fs.glob("**/secret.txt") == []


@pytest.mark.anyio
async def test_recursive_remove_unlinks_links_without_following_them(farm: Farm) -> None:
    """Removing a tree that contains a link to the outside removes the link, not its target."""
    fs = FsspecFs(f"file://{farm.root}")
    before = farm.snapshot()
    await fs.remove("sub", recursive=True)
    assert not (farm.root / "sub").exists()
    assert farm.snapshot() == before
    assert (farm.outside / "secret.txt").read_text() == SECRET


@pytest.mark.anyio
async def test_ordinary_files_next_to_links_still_work(farm: Farm) -> None:
    """The farm does not get in the way of normal work."""
    fs = FsspecFs(f"file://{farm.root}")
    await fs.write_text("sub/new.txt", "new")
    await fs.rename("sub/new.txt", "sub/renamed.txt")
    assert await fs.read_text("sub/renamed.txt") == "new"
    assert (farm.root / "sub" / "renamed.txt").read_text() == "new"


@pytest.mark.anyio
async def test_a_symlinked_root_is_resolved_once(tmp_path: Path) -> None:
    """The operator's root may itself be a link (e.g. /tmp on macOS); it is resolved when the
    adapter is built and files land in the real directory."""
    real = tmp_path / "real-root"
    real.mkdir()
    (tmp_path / "root-link").symlink_to(real)
    fs = FsspecFs(f"file://{tmp_path / 'root-link'}")
    await fs.write_text("a.txt", "x")
    assert (real / "a.txt").read_text() == "x"
    assert fs.root == str(real.resolve())


_FRAGMENTS = st.sampled_from(
    [
        "..",
        ".",
        "",
        "leak.txt",
        "leakdir",
        "sub",
        "deeper",
        "dangling",
        "dangling_dir",
        "abs",
        "loop",
        "inside_link",
        "dirlink_inside",
        "outside",
        "secret.txt",
        "dir",
        "inner.txt",
        "etc",
        "real.txt",
        "~",
        "%2e%2e",
        "%2f",
        "\uff0e\uff0e",
        "\u2215",
        "\u2024",
        "\x00",
        "C:",
        "file:",
        "\\",
        "/",
    ]
)
_HOSTILE = st.one_of(
    st.lists(_FRAGMENTS, min_size=1, max_size=6).map("/".join),
    st.lists(_FRAGMENTS, min_size=1, max_size=6).map("".join),
    st.text(max_size=20),
)
_OPERATIONS = st.sampled_from(sorted(_operations(FsspecFs("memory://"), "x")))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=_HOSTILE, operation=_OPERATIONS, backend=st.sampled_from(["asyncio", "trio"]))
def test_hostile_paths_never_touch_the_outside(farm: Farm, path: str, operation: str, backend: str) -> None:
    """Random hostile paths through random operations (on a freshly built farm each time):
    each either works inside the root or fails with a NoeticError; nothing from outside is
    returned, not even a name; the outside never changes."""
    build_root(farm.root, farm.outside)
    fs = FsspecFs(f"file://{farm.root}")
    before = farm.snapshot()

    async def attempt() -> Any:
        try:
            return await _operations(fs, path)[operation]()
        except NoeticError as exc:
            return exc

    result = anyio.run(attempt, backend=backend)
    if isinstance(result, NoeticError):
        assert str(farm.base) not in str(result)
    else:
        for leaked in (SECRET, "secret.txt", "inner.txt", "created-through-link"):
            assert leaked not in repr(result)
    assert farm.snapshot() == before
