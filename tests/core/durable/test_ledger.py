"""The step ledger's bookkeeping as a property: sharding, sequence order, compaction and
retention (RS-10..RS-12, RS-20)."""

from __future__ import annotations

import math
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import anyio
import noetic as nt
from hypothesis import given, settings
from hypothesis import strategies as st
from noetic.durable import MemoryCheckpointStore, StepLedger, StepLedgerRetention
from noetic.durable.ledger import load_ledger
from noetic.items import ItemLog

records = st.lists(
    st.tuples(st.sampled_from(["/a#0", "/a#0/b#0", "/c#0", "/c#1"]), st.integers(0, 99)), max_size=30
)


def fake_ctx() -> Any:
    """The counters `record` reads from a context."""
    return SimpleNamespace(
        _cost=Decimal(0),
        _billed=Decimal(0),
        _held=Decimal(0),
        _in=0,
        _out=0,
        _cached=None,
        _layer_usage=None,
        last_step_meta=None,
        item_log=ItemLog(),
    )


async def record_all(
    store: MemoryCheckpointStore, max_entries: float, history: list[tuple[str, int]]
) -> None:
    """Record `history` across two attempts (a crash halfway), as the interpreter would."""
    half = len(history) // 2
    retention = StepLedgerRetention(max_entries=max_entries)
    for chunk, recovered in ((history[:half], None), (history[half:], True)):
        window = await load_ledger(store, "e") if recovered else None
        ledger = StepLedger("e", retention=retention, recovered=window)
        for path, value in chunk:
            ctx = fake_ctx()
            step = nt.run_code(path.rsplit("/", 1)[-1].split("#")[0], lambda x: x)
            write = ledger.record(path, step, value, ctx, ledger.mark(ctx, "hash"))
            assert write is not None
            await store.write(write.sets, write.deletes)


def expected_live(history: list[tuple[str, int]], max_entries: float) -> list[tuple[str, int]]:
    """The reference model: a new entry supersedes the one at its path and compacts every entry
    beneath it (a completed composite replays whole); past `max_entries` the oldest goes."""
    live: list[tuple[str, int]] = []
    for path, value in history:
        live = [(p, v) for p, v in live if p != path and not p.startswith(path + "/")]
        live.append((path, value))
        while len(live) > max_entries:
            live.pop(0)
    return live


@settings(max_examples=60, deadline=None)
@given(history=records, max_entries=st.sampled_from([1, 2, 3, 7, math.inf]))
def test_rs_10_11_12_20_a_reloaded_ledger_keeps_exactly_the_entries_a_resume_can_use(
    history: list[tuple[str, int]], max_entries: float
) -> None:
    store = MemoryCheckpointStore()
    anyio.run(record_all, store, max_entries, history)
    window = anyio.run(load_ledger, store, "e")
    live = expected_live(history, max_entries)
    assert {path: found.entry.output for path, found in window.entries.items()} == dict(live)
    assert list(window.entries) == [path for path, _ in live]  # oldest first
    assert window.next_seq == len(history)  # never reuses a live sequence number
    assert len(anyio.run(store.list_prefix, "execution:e:ledger:")) == len(live)  # nothing stale kept
