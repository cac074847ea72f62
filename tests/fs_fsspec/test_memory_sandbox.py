"""The sandbox on a backend without symlinks: fsspec's process-wide memory store. Everything
outside the adapter's root — another agent's files, a sentinel at the top — stays unchanged
whatever hypothesis throws at it (reliability.md §3.1: "on every backend")."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import fsspec
from hypothesis import given, settings
from hypothesis import strategies as st
from noetic.errors import NoeticError
from noetic_fs_fsspec.adapter import FsspecFs

_FRAGMENTS = st.sampled_from(
    [
        "..",
        ".",
        "",
        "x",
        "secret",
        "other",
        "~",
        "%2e%2e",
        "%2F",
        "\uff0e\uff0e",
        "\u2215",
        "\x00",
        "memory:",
        "/",
        "\\",
    ]
)
_HOSTILE = st.one_of(
    st.lists(_FRAGMENTS, min_size=1, max_size=6).map("/".join),
    st.lists(_FRAGMENTS, min_size=1, max_size=6).map("".join),
    st.text(max_size=20),
)
_OPERATIONS = {
    "read": lambda fs, p: fs.read_bytes(p),
    "write": lambda fs, p: fs.write_bytes(p, b"pwned"),
    "append": lambda fs, p: fs.append_text(p, "pwned"),
    "mkdir": lambda fs, p: fs.mkdir(p, parents=True, exist_ok=True),
    "remove": lambda fs, p: fs.remove(p, recursive=True),
    "rename from": lambda fs, p: fs.rename(p, "moved", overwrite=True),
    "rename onto": lambda fs, p: fs.rename("own.txt", p, overwrite=True),
    "list": lambda fs, p: fs.list_dir(p),
    "glob": lambda fs, p: fs.glob(p),
}


def _outside(store: dict[str, Any], root: str) -> dict[str, bytes]:
    return {k: bytes(v.getbuffer()) for k, v in store.items() if not k.startswith(root + "/")}


@settings(max_examples=200, deadline=None)
@given(
    path=_HOSTILE,
    operation=st.sampled_from(sorted(_OPERATIONS)),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_memory_backend_outside_the_root_is_untouched(path: str, operation: str, backend: str) -> None:
    """Each attempt works inside the root or fails with a NoeticError; keys outside the root
    (including a sibling root sharing the prefix) never change and are never returned."""
    memory = fsspec.filesystem("memory")
    tag = uuid.uuid4().hex
    root = f"/sandbox-{tag}"
    memory.pipe_file(f"/secret-{tag}.txt", b"SECRET")
    memory.pipe_file(f"{root}-sibling/secret.txt", b"SECRET")
    fs = FsspecFs(f"memory://{root}")
    memory.pipe_file(f"{root}/own.txt", b"own")
    before = _outside(memory.store, root)

    async def attempt() -> Any:
        try:
            return await _OPERATIONS[operation](fs, path)
        except NoeticError:
            return None

    result = anyio.run(attempt, backend=backend)
    assert "SECRET" not in repr(result)
    assert "secret" not in repr(result)
    assert _outside(memory.store, root) == before
    for key in [k for k in memory.store if tag in k]:
        memory.store.pop(key)
    memory.pseudo_dirs[:] = [d for d in memory.pseudo_dirs if tag not in d]
