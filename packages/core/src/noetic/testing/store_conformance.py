"""`CheckpointStoreConformance`: the pytest suite every checkpoint store must pass.

Adopt it for your own backend by subclassing it and overriding the `store` fixture with one
that yields a fresh, empty store (and closes it afterwards):

    from noetic.testing.store_conformance import CheckpointStoreConformance

    class TestMyStore(CheckpointStoreConformance):
        @pytest.fixture
        async def store(self):
            store = MyStore(...)
            yield store
            await store.aclose()

A backend whose data lives outside the process should also override `other_handle`: a second,
independently opened store on the same data (another connection, as another process would
have). The suite then checks that writes are visible through it and that claims exclude it.
By default `other_handle` is the `store` itself.

The tests are `@pytest.mark.anyio` coroutines, so they run on whatever `anyio_backend` the
conftest selects. They check what `noetic.durable.store` promises: documents come back
verbatim, keys list in ascending code-point order whatever characters they hold, `get_many`
reads any number of keys, a batch is seen whole or not at all by concurrent readers, claims
are exclusive until released, and a harness can checkpoint and resume an execution on it.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from noetic.durable.store import CheckpointStore
from noetic.errors import NoeticError

__all__ = ["AWKWARD_KEYS", "CheckpointStoreConformance"]

#: Keys whose characters trip naive backends: SQL `LIKE` wildcards, quotes, backslashes,
#: non-ASCII text and the `:` separators of the runtime's own layout.
AWKWARD_KEYS: tuple[str, ...] = (
    "p:%",
    "p:_",
    "p:a%b",
    "p:a_b",
    "p:'quoted'",
    'p:"double"',
    "p:back\\slash",
    "p:A",
    "p:a",
    "p:Z",
    "p:é",
    "p:ß",
    "p:日本",
    "p:😀",
    "p:a:b",
    "p:",
)


class CheckpointStoreConformance:
    """The checkpoint store contract as pytest tests (see the module docstring)."""

    @pytest.fixture
    async def store(self) -> CheckpointStore:
        """A fresh, empty store; subclasses must override this fixture."""
        raise NotImplementedError("override the `store` fixture with one yielding your store")

    @pytest.fixture
    async def other_handle(self, store: CheckpointStore) -> CheckpointStore:
        """A second handle on the store's data (the store itself unless overridden)."""
        return store

    @pytest.mark.anyio
    async def test_the_store_implements_the_protocol(self, store: CheckpointStore) -> None:
        assert isinstance(store, CheckpointStore), "the store lacks a CheckpointStore method"

    @pytest.mark.anyio
    async def test_documents_come_back_verbatim(self, store: CheckpointStore) -> None:
        documents = {
            "execution:e:snapshot": '{"b": 1,  "a": [1.50, "x"]}',  # spacing and key order kept
            "execution:e:ledger:00000001": '"\\u00e9\\n\\u0000"',
            "execution:e:ledger:00000002": "null",
            "unicode": '"é 日本 😀"',
            "large": '"' + "x" * 300_000 + '"',
        }
        await store.write(documents)
        for key, text in documents.items():
            got = await store.get(key)
            assert got == text, f"{key!r} came back changed"
        assert await store.get_many(list(documents)) == documents

    @pytest.mark.anyio
    async def test_missing_keys_read_as_absent(self, store: CheckpointStore) -> None:
        assert await store.get("missing") is None
        assert await store.get_many(["missing", "also-missing"]) == {}
        assert await store.get_many([]) == {}
        assert await store.list_prefix("missing") == []
        await store.delete("missing")  # deleting a missing key is fine

    @pytest.mark.anyio
    async def test_set_overwrites_and_delete_removes(self, store: CheckpointStore) -> None:
        await store.set("k", '"one"')
        await store.set("k", '"two"')
        assert await store.get("k") == '"two"'
        await store.delete("k")
        assert await store.get("k") is None
        assert await store.list_prefix("") == []

    @pytest.mark.anyio
    async def test_keys_list_in_code_point_order(self, store: CheckpointStore) -> None:
        await store.write(dict.fromkeys(AWKWARD_KEYS, "1"))
        await store.write({"q:outside": "1", "p": "1", "o:before": "1"})
        listed = await store.list_prefix("p:")
        assert listed == sorted(AWKWARD_KEYS), "keys must list in ascending code-point order"
        assert await store.list_prefix("") == sorted([*AWKWARD_KEYS, "q:outside", "p", "o:before"])

    @pytest.mark.anyio
    async def test_prefix_characters_match_literally(self, store: CheckpointStore) -> None:
        await store.write(dict.fromkeys(AWKWARD_KEYS, "1"))
        assert await store.list_prefix("p:%") == ["p:%"]
        assert await store.list_prefix("p:_") == ["p:_"]
        assert await store.list_prefix("p:a") == ["p:a", "p:a%b", "p:a:b", "p:a_b"]
        assert await store.list_prefix("p:back\\") == ["p:back\\slash"]
        assert await store.list_prefix("p:'") == ["p:'quoted'"]
        assert await store.list_prefix("p:日") == ["p:日本"]
        assert await store.get_many(["p:%", "p:_"]) == {"p:%": "1", "p:_": "1"}

    @pytest.mark.anyio
    async def test_execution_prefixes_do_not_overlap(self, store: CheckpointStore) -> None:
        from noetic.durable.store import execution_prefix

        await store.write(
            {execution_prefix("a") + "snapshot": "1", execution_prefix("a:b") + "snapshot": "2"}
        )
        assert await store.list_prefix(execution_prefix("a")) == [execution_prefix("a") + "snapshot"]

    @pytest.mark.anyio
    async def test_get_many_reads_thousands_of_keys(self, store: CheckpointStore) -> None:
        keys = [f"k:{i:05d}" for i in range(2500)]
        await store.write({key: str(i) for i, key in enumerate(keys)})
        found = await store.get_many([*keys, "k:missing", keys[0]])
        assert found == {key: str(i) for i, key in enumerate(keys)}
        assert len(await store.list_prefix("k:")) == 2500

    @pytest.mark.anyio
    async def test_a_batch_sets_and_deletes_together(self, store: CheckpointStore) -> None:
        await store.write({"a": "1", "b": "2", "c": "3"})
        await store.write({"d": "4", "a": "10"}, ["b", "never-there"])
        assert await store.get_many(["a", "b", "c", "d"]) == {"a": "10", "c": "3", "d": "4"}

    @pytest.mark.anyio
    async def test_readers_never_see_half_a_batch(
        self, store: CheckpointStore, other_handle: CheckpointStore
    ) -> None:
        """A snapshot and its ledger row are one batch: a reader sees both or neither."""
        keys = [f"pair:{i}" for i in range(8)]
        await store.write(dict.fromkeys(keys, "0"))
        torn: list[dict[str, str]] = []

        writing = True

        async def writer() -> None:
            nonlocal writing
            for n in range(1, 40):
                await store.write(dict.fromkeys(keys, str(n)), [f"gone:{n - 1}"])
            writing = False

        async def reader() -> None:
            while writing:
                seen = await other_handle.get_many(keys)
                if len(set(seen.values())) != 1 or len(seen) != len(keys):
                    torn.append(seen)
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            tg.start_soon(reader)
            tg.start_soon(reader)
        assert not torn, f"a reader saw a partial batch: {torn[0]}"
        assert await other_handle.get_many(keys) == dict.fromkeys(keys, "39")

    @pytest.mark.anyio
    async def test_writes_are_visible_through_another_handle(
        self, store: CheckpointStore, other_handle: CheckpointStore
    ) -> None:
        await store.write({"shared:1": '{"v":1}'})
        assert await other_handle.get("shared:1") == '{"v":1}'
        await other_handle.delete("shared:1")
        assert await store.get("shared:1") is None

    @pytest.mark.anyio
    async def test_claims_are_exclusive_until_released(
        self, store: CheckpointStore, other_handle: CheckpointStore
    ) -> None:
        claim = await store.claim("e")
        other = await store.claim("f")  # another execution is independent
        for claimant in (store, other_handle):
            with pytest.raises(NoeticError) as err:
                await claimant.claim("e")
            assert err.value.code == "EXECUTION_LOCKED", f"a second claim raised {err.value.code}"
            assert err.value.execution_id == "e"
        await claim.release()
        await claim.release()  # idempotent
        again = await other_handle.claim("e")
        with pytest.raises(NoeticError) as err:
            await store.claim("e")
        assert err.value.code == "EXECUTION_LOCKED"
        await again.release()
        await other.release()
        await (await store.claim("e")).release()

    @pytest.mark.anyio
    async def test_concurrent_claimants_get_exactly_one_claim(
        self, store: CheckpointStore, other_handle: CheckpointStore
    ) -> None:
        winners: list[Any] = []
        refused: list[str] = []

        async def claimant(handle: CheckpointStore) -> None:
            try:
                winners.append(await handle.claim("contended"))
            except NoeticError as exc:
                refused.append(exc.code)

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(claimant, store if i % 2 else other_handle)
        assert len(winners) == 1, f"{len(winners)} claimants won one execution"
        assert refused == ["EXECUTION_LOCKED"] * 5
        await winners[0].release()

    @pytest.mark.anyio
    async def test_a_harness_checkpoints_and_resumes_on_the_store(
        self, store: CheckpointStore, other_handle: CheckpointStore
    ) -> None:
        import noetic as nt

        graph = nt.sequence(
            "two", [nt.run_code("first", lambda x: f"{x}!"), nt.run_code("second", str.upper)]
        )
        async with nt.AgentHarness("conformance", agent_graph=graph, storage=store) as harness:
            done = await harness.run("hi", execution_id="conformance-run")
        assert done.output == "HI!"
        assert await store.list_prefix("execution:conformance-run:"), "the run left no checkpoint"
        async with nt.AgentHarness("conformance", agent_graph=graph, storage=other_handle) as harness:
            again = await harness.resume("conformance-run")
        assert again.output == "HI!"
        assert again.execution_id == "conformance-run"
