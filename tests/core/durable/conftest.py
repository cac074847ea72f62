"""Fixtures for the durable-execution tests: every resume test runs on both embedded stores."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.durable import CheckpointStore, MemoryCheckpointStore, SqliteCheckpointStore


class Storage:
    """One backend under test: what to pass as `storage=`, and a direct handle for inspection."""

    def __init__(self, kind: str, tmp_path: Path):
        self.kind = kind
        self.path = tmp_path / "checkpoints.db"
        self._memory = MemoryCheckpointStore()

    def spec(self, *, synchronous: str = "full") -> Any:
        """`storage=` for a harness: the shared memory store, or the SQLite file's URL
        (`synchronous="normal"` for tests of many steps that are not about the disk flush)."""
        if self.kind == "memory":
            return self._memory
        return f"sqlite:///{self.path}" + ("" if synchronous == "full" else f"?synchronous={synchronous}")

    def open(self) -> CheckpointStore:
        """A store reading the same records (close it with `aclose`)."""
        return self._memory if self.kind == "memory" else SqliteCheckpointStore(str(self.path))

    async def keys(self, prefix: str = "") -> list[str]:
        """Every stored key under `prefix`."""
        store = self.open()
        try:
            return await store.list_prefix(prefix)
        finally:
            await store.aclose()

    async def edit(self, key: str, change: Callable[[str], str]) -> None:
        """Rewrite one stored document (through the store, so checksums stay valid)."""
        store = self.open()
        try:
            text = await store.get(key)
            assert text is not None, key
            await store.set(key, change(text))
        finally:
            await store.aclose()


@pytest.fixture(params=["memory", "sqlite"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """The backend a test runs on (each test runs on both)."""
    return Storage(str(request.param), tmp_path)


@pytest.fixture
def collect() -> Callable[[nt.AgentHarness, Callable[[], Awaitable[Any]]], Awaitable[tuple[Any, list[Any]]]]:
    """`await collect(h, lambda: h.resume(eid))` -> (result, full-stream events of that turn)."""

    async def run(h: nt.AgentHarness, turn: Callable[[], Awaitable[Any]]) -> tuple[Any, list[Any]]:
        events: list[Any] = []

        async def watch() -> None:
            async for event in h.get_full_stream():
                events.append(event)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await anyio.wait_all_tasks_blocked()
            result = await turn()
        return result, events

    return run


@pytest.fixture
def flaky() -> Callable[..., Any]:
    """A `run_code` body that raises while `switch["fail"]` is true (a crash stand-in in-process)."""

    def make(switch: dict[str, bool], value: Any = "done") -> Callable[[Any], Any]:
        def body(_: Any) -> Any:
            if switch["fail"]:
                raise RuntimeError("simulated crash")
            return value

        return body

    return make
