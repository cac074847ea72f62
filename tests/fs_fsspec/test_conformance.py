"""`FsspecFs` passes the filesystem conformance suite on its local and memory backends
(`noetic.testing.fs_conformance`), on asyncio and trio."""

from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import pytest
from noetic.testing.fs_conformance import FsConformance
from noetic_fs_fsspec.adapter import FsspecFs


class TestLocalFsspecFs(FsConformance):
    @pytest.fixture
    def fs(self, tmp_path: Path) -> FsspecFs:
        return FsspecFs(f"file://{tmp_path}/root")


class TestMemoryFsspecFs(FsConformance):
    @pytest.fixture
    def fs(self) -> FsspecFs:
        return FsspecFs(f"memory://conformance-{uuid.uuid4().hex}")


class TestMemoryInstanceFsspecFs(FsConformance):
    @pytest.fixture
    def fs(self) -> FsspecFs:
        return FsspecFs(fsspec.filesystem("memory"), root=f"/instance-{uuid.uuid4().hex}")


class TestAsyncBackendFsspecFs(FsConformance):
    """An fsspec async backend from a URL: native on asyncio, worker threads on trio."""

    @pytest.fixture
    def fs(self, asyncmem_url: str) -> FsspecFs:
        return FsspecFs(asyncmem_url)
