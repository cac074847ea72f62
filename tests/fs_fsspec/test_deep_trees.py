"""Removing deep and wide trees on the local backend (issue 18 item 19): no recursion, a
bounded number of open descriptors, links unlinked and never followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from noetic_fs_fsspec import local
from noetic_fs_fsspec.adapter import FsspecFs

pytestmark = pytest.mark.anyio


def build(root: Path, depth: int, outside: Path) -> None:
    """A chain `d/d/...` with a file, a wide side directory and a link out at every level."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(depth):
        os.mkdir("d", dir_fd=fd)
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        if level % 25 == 0:
            os.mkdir("wide", dir_fd=fd)
            wide = os.open("wide", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            for i in range(30):
                os.mkdir(f"w{i}", dir_fd=wide)
            os.symlink(str(outside), "out", dir_fd=wide)
            os.close(wide)
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)


async def test_a_deep_tree_is_removed_with_few_descriptors_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "_HELD_DIRS", 3)
    opened: list[int] = []
    real_open = os.open

    def counting_open(*args: object, **kwargs: object) -> int:
        fd = real_open(*args, **kwargs)  # type: ignore[arg-type]
        opened.append(fd)
        return fd

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    build(root, 300, outside)
    (root / "sibling.txt").write_text("stays")
    fs = FsspecFs(f"file://{root}")
    monkeypatch.setattr(local.os, "open", counting_open)
    await fs.remove("d", recursive=True)
    assert sorted(p.name for p in root.iterdir()) == ["f", "sibling.txt", "wide"]
    assert (outside / "keep.txt").read_text() == "kept"
    # descriptors were reused: far fewer distinct numbers than directories walked
    assert len(set(opened)) < 20


@pytest.mark.parametrize("pattern", ["**/f", "**", "d/*/f", "*", "d/d/d/**/w1*", "**/out", "wide/*"])
async def test_glob_walks_the_tree_in_one_pass_with_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    from noetic.fs.glob import glob_paths

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    build(root, 60, outside)
    fs = FsspecFs(f"file://{root}")
    monkeypatch.setattr(local, "_HELD_DIRS", 3)
    walked = await fs.glob(pattern)
    assert walked == await glob_paths(fs, pattern)  # listed directory by directory
    assert not any(path.endswith("out") for path in walked)  # links are never listed
    assert bool(walked) is (pattern != "**/out")
