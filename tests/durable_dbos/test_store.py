"""`PostgresCheckpointStore` passes the checkpoint store conformance suite on a real server,
and keeps its own promises: checksums, a versioned layout, leases that free a dead holder's
claim, retries across a server restart, URL options, and registration under postgresql://."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import noetic as nt
import psycopg
import pytest
from noetic.durable import CheckpointStore
from noetic.testing import ScriptedModel
from noetic.testing.store_conformance import CheckpointStoreConformance
from noetic_durable_dbos.local_postgres import LocalPostgres
from noetic_durable_dbos.store import PostgresCheckpointStore, postgres_store_from_url


class TestPostgresStore(CheckpointStoreConformance):
    @pytest.fixture
    async def store(self, database_url: str) -> AsyncIterator[CheckpointStore]:
        store = PostgresCheckpointStore(database_url)
        yield store
        await store.aclose()

    @pytest.fixture
    async def other_handle(self, database_url: str) -> AsyncIterator[CheckpointStore]:
        store = PostgresCheckpointStore(database_url)
        yield store
        await store.aclose()


pytestmark = pytest.mark.anyio


async def test_a_row_failing_its_checksum_is_corrupt(database_url: str) -> None:
    store = PostgresCheckpointStore(database_url)
    await store.set("execution:e:snapshot", '{"a":1}')
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE noetic_checkpoint_rows SET value = '{\"a\":2}'")
    with pytest.raises(nt.NoeticError) as err:
        await store.get("execution:e:snapshot")
    assert err.value.code == "CHECKPOINT_CORRUPT"
    assert "execution:e:snapshot" in err.value.message
    await store.aclose()


async def test_an_execution_id_holding_a_lone_surrogate_is_invalid(database_url: str) -> None:
    bad = json.loads('"job-\\ud800"')
    store = PostgresCheckpointStore(database_url)
    try:
        with pytest.raises(nt.NoeticError) as claimed:
            await store.claim(bad)
        async with nt.AgentHarness(
            "t", agent_graph=nt.call_model("a"), model=ScriptedModel.echo(), storage=store
        ) as h:
            with pytest.raises(nt.NoeticError) as resumed:
                await h.resume(bad)
    finally:
        await store.aclose()
    assert claimed.value.code == resumed.value.code == "INVALID_ID"


async def test_a_newer_layout_is_refused(database_url: str) -> None:
    first = PostgresCheckpointStore(database_url)
    await first.set("k", "1")
    await first.aclose()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE noetic_checkpoint_layout SET version = 7")
    store = PostgresCheckpointStore(database_url)
    with pytest.raises(nt.NoeticConfigError) as err:
        await store.get("k")
    assert err.value.code == "CHECKPOINT_SCHEMA_MISMATCH"
    await store.aclose()


async def test_a_claim_whose_holder_stopped_renewing_becomes_claimable(database_url: str) -> None:
    """A dead process renews nothing: once its lease runs out, another store takes the claim."""
    dead = PostgresCheckpointStore(database_url, claim_lease=0.6)
    await dead.claim("e")
    dead._stop.set()  # its renewals stop, as if the process had died
    live = PostgresCheckpointStore(database_url, claim_lease=0.6)
    with pytest.raises(nt.NoeticError) as err:
        await live.claim("e")
    assert err.value.code == "EXECUTION_LOCKED"
    import anyio

    await anyio.sleep(0.8)
    claim = await live.claim("e")
    await claim.release()
    await live.aclose()
    await dead.aclose()


async def test_a_held_claim_is_renewed_past_its_lease(database_url: str) -> None:
    holder = PostgresCheckpointStore(database_url, claim_lease=0.6)
    claim = await holder.claim("e")
    import anyio

    await anyio.sleep(1.5)  # more than two leases: only renewals keep it
    other = PostgresCheckpointStore(database_url, claim_lease=0.6)
    with pytest.raises(nt.NoeticError) as err:
        await other.claim("e")
    assert err.value.code == "EXECUTION_LOCKED"
    await claim.release()
    await (await other.claim("e")).release()
    await holder.aclose()
    await other.aclose()


async def test_operations_survive_a_server_restart(postgres: LocalPostgres, database_url: str) -> None:
    store = PostgresCheckpointStore(database_url)
    await store.set("before", "1")
    postgres.restart(mode="immediate")
    await store.write({"after": "2"})  # the pooled connection is dead: retried on a new one
    assert await store.get_many(["before", "after"]) == {"before": "1", "after": "2"}
    await store.aclose()


async def test_an_unreachable_server_fails_within_retry_for() -> None:
    store = PostgresCheckpointStore("postgresql://nobody@127.0.0.1:1/none", retry_for=0.5)
    with pytest.raises(nt.NoeticError) as err:
        await store.get("k")
    assert err.value.code == "CHECKPOINT_STORE_FAILED"
    assert "127.0.0.1:1/none" in err.value.message
    await store.aclose()


def test_url_options_are_the_stores_and_the_rest_go_to_libpq() -> None:
    store = postgres_store_from_url(
        "postgresql://u:secret@db.example:6543/agents?claim_lease=5&retry_for=2&pool_size=3&sslmode=disable"
    )
    assert (store.claim_lease, store.retry_for) == (5.0, 2.0)
    assert store._pool.max_size == 3
    assert store.url == "postgresql://u:secret@db.example:6543/agents?sslmode=disable"
    assert "secret" not in repr(store)


@pytest.mark.parametrize(
    "url", ["postgresql://h/db?claim_lease=0", "postgresql://h/db?pool_size=x", "postgresql://h/db?bogus=1"]
)
def test_bad_urls_are_config_errors(url: str) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        postgres_store_from_url(url)
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"


async def test_a_harness_opens_the_store_from_its_url(database_url: str) -> None:
    graph = nt.run_code("echo", lambda x: x)
    async with nt.AgentHarness("t", agent_graph=graph, storage=database_url) as harness:
        response = await harness.run("hi", execution_id="via-url")
        store: Any = harness._checkpoint_store()
        assert isinstance(store, PostgresCheckpointStore)
    assert store._closed  # the harness closed the store it opened
    async with nt.AgentHarness(
        "t", agent_graph=graph, storage=database_url.replace("postgresql", "postgres", 1)
    ) as harness:
        assert (await harness.resume(response.execution_id)).output == "hi"


async def test_two_harnesses_racing_for_one_execution_run_it_once(database_url: str) -> None:
    """Two processes' worth of stores: one harness runs the execution, the other is refused."""
    import anyio

    calls: list[str] = []
    entered = anyio.Event()

    async def slow(value: str) -> str:
        calls.append(value)
        entered.set()
        await anyio.sleep(0.5)
        return value.upper()

    graph = nt.run_code("slow", slow)
    outcomes: list[object] = []

    async def attempt(store: PostgresCheckpointStore) -> None:
        async with nt.AgentHarness("race", agent_graph=graph, storage=store) as harness:
            try:
                outcomes.append((await harness.run("go", execution_id="raced")).output)
            except nt.NoeticError as exc:
                outcomes.append(exc.code)

    first, second = PostgresCheckpointStore(database_url), PostgresCheckpointStore(database_url)
    async with anyio.create_task_group() as tg:
        tg.start_soon(attempt, first)
        await entered.wait()
        tg.start_soon(attempt, second)
    assert calls == ["go"]
    assert sorted(map(str, outcomes)) == ["EXECUTION_LOCKED", "GO"]
    await first.aclose()
    await second.aclose()


async def test_an_evicted_thread_comes_back_from_postgres_with_its_history(database_url: str) -> None:
    from noetic.durable.history import load_point, point_of
    from noetic.items import item_text
    from noetic.sessions import history_key
    from noetic.testing import ScriptedModel

    model = ScriptedModel.echo()
    graph = nt.call_model("answer")
    async with nt.AgentHarness(
        "t", agent_graph=graph, model=model, storage=database_url, max_idle_sessions=0
    ) as h:
        await h.run("my name is Ada", thread_id="ada")
        await h.wait_background()  # the history is written out in the background
        assert "ada" not in h._sessions._live
        store: Any = h._checkpoint_store()
        assert await store.get(history_key("ada")) is not None
        await h.run("what is my name?", thread_id="ada")
        seen = [item_text(item) for item in model.calls[-1].items]
        assert seen == ["my name is Ada", "my name is Ada", "what is my name?"]
        await h.wait_background()  # evicted again: the record names both turns
        record = json.loads(await store.get(history_key("ada")))
        point = point_of(record["history"])
        assert point is not None
        items = await load_point(store, "ada", point, {}, owner=history_key("ada"))
        assert [item_text(item) for item in items][::2] == ["my name is Ada", "what is my name?"]
