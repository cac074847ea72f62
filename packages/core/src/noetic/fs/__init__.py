"""Filesystems for agents: the `FsAdapter` contract, its sandbox, and the in-memory default.

- `noetic.fs.contract`: `FsAdapter` (what `ctx.fs` offers) and `FileStat`;
- `noetic.fs.paths`: `safe_path`, the lexical sandbox every adapter applies first;
- `noetic.fs.errors`: the `NoeticError`s adapters raise, worded the same everywhere;
- `noetic.fs.memory`: `MemoryFs`, the default when a harness gets no `fs=`;
- `noetic.fs.glob`: `glob_paths`, pattern matching over any adapter;
- `noetic.fs.tools`: the `read_file`, `write_file` and `list_dir` tools for models.

Local disks, object stores and every other fsspec backend come from `noetic-fs-fsspec`
(`AgentHarness(fs="file:///srv/agent")`); `noetic.testing.fs_conformance` checks any adapter.
"""

from noetic.fs.contract import FileKind, FileStat, FsAdapter
from noetic.fs.memory import MemoryFs, memory_fs_from_url
from noetic.fs.paths import safe_path

__all__ = ["FileKind", "FileStat", "FsAdapter", "MemoryFs", "memory_fs_from_url", "safe_path"]
