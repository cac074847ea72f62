"""Dead-worker detection: a silent worker is found once, by one live worker; a worker back
from an outage of its own does not declare the others dead."""

from __future__ import annotations

import time

import psycopg
from noetic_durable_dbos.liveness import Liveness


def make(url: str, name: str) -> Liveness:
    return Liveness(url, name, queue="q", heartbeat=0.1, dead_after=0.5)


def test_a_silent_worker_is_recovered_once_by_one_live_worker(database_url: str) -> None:
    dead, live, other = make(database_url, "dead"), make(database_url, "live"), make(database_url, "other")
    assert dead.beat() and live.beat() and other.beat()
    assert live.sweep(lambda ids: None) == []  # not yet healthy for dead_after
    recovered: list[list[str]] = []
    deadline = time.monotonic() + 10
    while not recovered:
        assert time.monotonic() < deadline, "the silent worker was never found"
        time.sleep(0.1)
        live.beat()
        other.beat()
        for sweeper in (live, other):
            found = sweeper.sweep(lambda ids: recovered.append(list(ids)))
            assert found in ([], ["dead"])
    assert recovered == [["dead"]]
    time.sleep(0.6)
    live.beat()
    other.beat()
    assert live.sweep(lambda ids: recovered.append(list(ids))) == []  # its row is gone
    assert recovered == [["dead"]]


def test_a_failed_recovery_leaves_the_dead_worker_for_the_next_sweep(database_url: str) -> None:
    dead, live = make(database_url, "dead"), make(database_url, "live")
    dead.beat()
    live.beat()
    time.sleep(0.6)
    live.beat()

    def crash(ids: object) -> None:
        raise psycopg.OperationalError("the sweeper lost its database")

    assert live.sweep(crash) == []
    for _ in range(20):  # healthy again after dead_after of heartbeats
        time.sleep(0.1)
        live.beat()
    assert live.sweep(lambda ids: None) == ["dead"]


def test_a_worker_back_from_an_outage_waits_before_sweeping(database_url: str) -> None:
    peer, returning = make(database_url, "peer"), make(database_url, "returning")
    peer.beat()
    returning.url = "postgresql://nobody@127.0.0.1:1/none"
    assert not returning.beat()  # the outage
    returning.url = database_url
    time.sleep(0.6)  # the peer's heartbeat is as stale as the returning worker's
    assert returning.beat()
    assert returning.sweep(lambda ids: None) == []  # not healthy for dead_after yet
    peer.beat()
    time.sleep(0.6)
    returning.beat()
    peer.beat()
    assert returning.sweep(lambda ids: None) == []  # the peer is alive again


def test_a_worker_that_leaves_is_swept_at_once(database_url: str) -> None:
    leaving, live = make(database_url, "leaving"), make(database_url, "live")
    leaving.beat()
    leaving.leave()
    live.beat()
    live._healthy_since = time.monotonic() - 1  # as if it had been up for a while
    assert live.sweep(lambda ids: None) == ["leaving"]
