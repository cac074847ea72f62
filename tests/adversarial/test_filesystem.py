"""Trees a model can build: walks of the local fs-fsspec backend are iterative and hold a
bounded number of descriptors, however deep the tree."""

from __future__ import annotations

import shutil
import subprocess

import pytest


@pytest.fixture(autouse=True)
def _remove_deep_trees(child):
    """Remove what a case left behind with `rm -rf` (which walks without recursion): pytest's
    own clean-up of old temporary folders fails on trees this deep, for every later run."""
    yield
    rm = shutil.which("rm")
    if rm is not None:
        subprocess.run([rm, "-rf", str(child.tmp_path / "sandbox")], check=False)


DEEP_TREE = """
import os, resource
from noetic_fs_fsspec import FsspecFs

DEPTH = {depth}

def build(root):
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEPTH):
        os.mkdir("d", dir_fd=fd)
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.symlink("/", "escape", dir_fd=fd)
    os.close(fd)

async def main():
    root = os.path.abspath("sandbox")
    os.mkdir(root)
    build(root)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    fs = FsspecFs(f"file://{{root}}")
    await fs.remove("d", recursive=True)
    return {{"left": sorted(os.listdir(root)), "root_still_there": os.path.isdir("/")}}
"""


def test_removing_a_3000_deep_tree_works(child):
    result = child.run(DEEP_TREE.format(depth=3000), wall_clock=120).returned()
    assert result == {"left": ["f"], "root_still_there": True}


DEEP_GLOB = """
import os
from noetic_fs_fsspec import FsspecFs

async def main():
    root = os.path.abspath("sandbox")
    os.mkdir(root)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(3000):
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(os.open("needle", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)
    fs = FsspecFs(f"file://{root}")
    found = await fs.glob("**/needle")
    return [len(found), found[0].count("/")]
"""


def test_globbing_a_3000_deep_tree_is_one_walk(child):
    # found attacking the fix: listing level by level walked from the root each time (15 s)
    assert child.run(DEEP_GLOB, wall_clock=10).returned() == [1, 3000]
