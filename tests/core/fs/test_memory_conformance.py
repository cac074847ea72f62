"""`MemoryFs` passes the filesystem conformance suite, on asyncio and trio."""

from __future__ import annotations

import pytest
from noetic.fs.memory import MemoryFs
from noetic.testing.fs_conformance import FsConformance


class TestMemoryFs(FsConformance):
    @pytest.fixture
    def fs(self) -> MemoryFs:
        return MemoryFs()
