"""Leaving `async with AgentHarness` under faults (issue 13, point 3): the block's own error is
what the caller sees, workers are stopped without cancelling the caller, and background jobs
get a bounded grace."""

from __future__ import annotations

import time
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.model import ModelRequest
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def broken_stream(request: ModelRequest) -> Any:
    """A cut stream whose cost is reconciled in the background, as a paid adapter does."""
    assert request.billing is not None
    hold = request.billing.hold(0.01)

    async def reconcile() -> None:
        await anyio.sleep(0.05)
        hold.settle(0.004, 0.004)

    request.billing.run_in_background(reconcile)
    raise nt.NoeticError("model_stream_error", "the stream was cut", retryable=True)


async def test_a_model_error_leaves_the_block_as_itself() -> None:
    """Issue 13, point 3: `except Exception` around the block catches the turn's error (not
    an anyio cancellation), after the reconciliation it started has settled."""
    caught: Exception | None = None
    with anyio.fail_after(5):
        try:
            async with nt.AgentHarness(
                "x", agent_graph=nt.call_model("m"), model=ScriptedModel([broken_stream])
            ) as h:
                await h.run("hi")
        except Exception as exc:
            caught = exc
    assert isinstance(caught, nt.NoeticError) and caught.code == "model_stream_error"


async def test_raising_while_a_worker_turn_runs_stops_it_without_cancelling_the_caller() -> None:
    """Issue 13, point 3: the worker is aborted and the caller's exception propagates as is."""
    started = anyio.Event()

    async def forever(_: Any) -> None:
        started.set()
        await anyio.sleep(60)

    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        async with nt.AgentHarness("x", agent_graph=nt.run_code("f", forever)) as h:
            await h.execute("go")
            await started.wait()
            raise nt.NoeticError("model_error", "the caller's own failure")
    assert err.value.message == "the caller's own failure"


async def test_exit_cancels_background_jobs_after_the_grace() -> None:
    """Issue 13, point 3: a background job that outlives `background_grace` is cancelled on
    exit and counted; the exit does not wait for the job's own timeout."""
    finished: list[bool] = []

    async def slow_job() -> None:
        await anyio.sleep(30)
        finished.append(True)

    def start(value: Any, ctx: nt.Context) -> Any:
        ctx._exec.billing(ctx).run_in_background(slow_job)
        return value

    harness = nt.AgentHarness("x", agent_graph=nt.run_code("s", start), background_grace=0.2)
    with anyio.fail_after(5):
        async with harness as h:
            await h.run("go")
            began = time.monotonic()
    assert time.monotonic() - began < 3
    assert finished == [] and harness.unfinished_background_jobs == 1
