"""The memory and SQLite stores pass the checkpoint store conformance suite, and the suite
fails stores that break the contract (unsorted listing, `LIKE`-style prefixes, torn batches,
claims that do not exclude)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import anyio.lowlevel
import pytest
from noetic.durable import CheckpointStore, MemoryCheckpointStore, SqliteCheckpointStore
from noetic.durable.claims import HeldClaim
from noetic.testing.store_conformance import CheckpointStoreConformance


class TestMemoryStore(CheckpointStoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[CheckpointStore]:
        store = MemoryCheckpointStore()
        yield store
        await store.aclose()


class TestSqliteStore(CheckpointStoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
        store = SqliteCheckpointStore(str(tmp_path / "conformance.db"))
        yield store
        await store.aclose()

    @pytest.fixture
    async def other_handle(self, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
        store = SqliteCheckpointStore(str(tmp_path / "conformance.db"))
        yield store
        await store.aclose()


# --- the suite catches broken stores ----------------------------------------------------------


class InsertionOrder(MemoryCheckpointStore):
    async def list_prefix(self, prefix: str) -> list[str]:
        return [key for key in self._rows if key.startswith(prefix)]


class LikePrefix(MemoryCheckpointStore):
    """Treats `_` in a prefix as "any character", as an unescaped SQL LIKE would."""

    async def list_prefix(self, prefix: str) -> list[str]:
        def matches(key: str) -> bool:
            return len(key) >= len(prefix) and all(
                p == "_" or p == k for p, k in zip(prefix, key[: len(prefix)], strict=True)
            )

        return sorted(key for key in self._rows if matches(key))


class TornBatches(MemoryCheckpointStore):
    """Writes a batch one key at a time, yielding between keys."""

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        for key, value in sets.items():
            self._rows[key] = value
            await anyio.lowlevel.checkpoint()
        for key in deletes:
            self._rows.pop(key, None)


class SharedClaims(MemoryCheckpointStore):
    """Hands out a claim to everyone."""

    async def claim(self, execution_id: str) -> HeldClaim:
        held = await super().claim(execution_id)
        await held.release()
        return held


class RewritesDocuments(MemoryCheckpointStore):
    """Normalises JSON on the way in, as a JSONB column would."""

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        import json

        await super().write({key: json.dumps(json.loads(value)) for key, value in sets.items()}, deletes)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("broken", "test_name"),
    [
        (InsertionOrder, "test_keys_list_in_code_point_order"),
        (LikePrefix, "test_prefix_characters_match_literally"),
        (TornBatches, "test_readers_never_see_half_a_batch"),
        (SharedClaims, "test_claims_are_exclusive_until_released"),
        (SharedClaims, "test_concurrent_claimants_get_exactly_one_claim"),
        (RewritesDocuments, "test_documents_come_back_verbatim"),
    ],
)
async def test_the_suite_fails_a_broken_store(broken: type[MemoryCheckpointStore], test_name: str) -> None:
    store = broken()
    check = getattr(CheckpointStoreConformance(), test_name)
    arguments = {"store": store}
    if "other_handle" in inspect.signature(check).parameters:
        arguments["other_handle"] = store
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        await check(**arguments)


@pytest.mark.anyio
async def test_the_suite_passes_the_memory_store_when_called_directly() -> None:
    """The same direct calls pass on a correct store, so the failures above are the bugs'."""
    suite = CheckpointStoreConformance()
    for name in (
        "test_keys_list_in_code_point_order",
        "test_prefix_characters_match_literally",
        "test_readers_never_see_half_a_batch",
        "test_claims_are_exclusive_until_released",
        "test_concurrent_claimants_get_exactly_one_claim",
        "test_documents_come_back_verbatim",
    ):
        store = MemoryCheckpointStore()
        check = getattr(suite, name)
        arguments = {"store": store}
        if "other_handle" in inspect.signature(check).parameters:
            arguments["other_handle"] = store
        await check(**arguments)
