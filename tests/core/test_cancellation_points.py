"""Every step boundary is a cancellation point (issue 13, point 4): loops of synchronous steps
stop promptly on a timeout, an abort from another task, `harness.cancel` and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
import pytest

pytestmark = pytest.mark.anyio


#: Iterations a busy loop may run before it fails: seconds of work, so that a cancellation
#: which does not land fails the test (with `step_failed`) instead of hanging it.
CEILING = 300_000


def busy_loop() -> nt.Step:
    """A loop of synchronous steps that only a cancellation ends in time."""
    return nt.loop(
        "spin", nt.run_code("tick", lambda n: n + 1), until=nt.until.never(), max_iterations=CEILING
    )


async def test_fail_after_stops_a_loop_of_sync_steps() -> None:
    """Issue 13, point 4: `anyio.fail_after(0.3)` ends the loop in well under a second."""
    began = time.monotonic()
    with pytest.raises(TimeoutError):
        async with nt.AgentHarness("c", agent_graph=busy_loop()) as h:
            with anyio.fail_after(0.3):
                await h.run(0)
    assert time.monotonic() - began < 2.0


async def test_abort_from_another_task_stops_a_loop_of_sync_steps() -> None:
    """Issue 13, point 4: `harness.abort` (which calls `ctx.abort()`) from a second task lands."""
    with anyio.fail_after(20):
        async with nt.AgentHarness("c", agent_graph=busy_loop()) as h, anyio.create_task_group() as tg:

            async def stop_soon() -> None:
                await anyio.sleep(0.1)
                h.abort(reason="enough")

            tg.start_soon(stop_soon)
            with pytest.raises(nt.NoeticError) as err:
                await h.run(0)
    assert err.value.code == "cancelled" and "enough" in err.value.message


async def test_harness_cancel_stops_a_loop_of_sync_steps() -> None:
    """Issue 13, point 4: `harness.cancel(ctx)` from a second task lands on a busy loop."""
    seen: dict[str, nt.Context] = {}

    def grab(n: Any, ctx: nt.Context) -> Any:
        seen["ctx"] = ctx
        return n

    graph = nt.sequence("s", [nt.run_code("grab", grab), busy_loop()])
    with anyio.fail_after(20):
        async with nt.AgentHarness("c", agent_graph=graph) as h, anyio.create_task_group() as tg:

            async def cancel_soon() -> None:
                await anyio.sleep(0.1)
                await h.cancel(seen["ctx"], "stop")

            tg.start_soon(cancel_soon)
            with pytest.raises(nt.NoeticError) as err:
                await h.run(0)
    assert err.value.code == "cancelled"


INFINITE_COMPUTE = {
    "version": 1,
    "customItems": {
        "ready": {
            "type": "t:ready",
            "output": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
        }
    },
    "root": {
        "kind": "sequence",
        "id": "s",
        "steps": [
            {
                "kind": "compute",
                "id": "start",
                "expr": "$",
                "emitItems": {"item": "ready", "onDone": "{ 'n': n }"},
            },
            {
                "kind": "loop",
                "id": "forever",
                "maxIterations": "infinity",
                "body": {"kind": "compute", "id": "step", "expr": "{ 'n': n + 1 }"},
                "until": {"kind": "never"},
            },
        ],
    },
}


def wait_for_line(stream: Any, marker: str, timeout: float) -> str:
    """Read `stream` until a line containing `marker` arrives (bounded by `timeout`)."""
    import select

    seen = ""
    deadline = time.monotonic() + timeout
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.2)
        if ready:
            chunk = os.read(stream.fileno(), 4096).decode()
            if not chunk:
                break
            seen += chunk
    return seen


def test_ctrl_c_ends_noetic_run_with_one_line_and_130(tmp_path: Path) -> None:
    """Issue 13, point 4: SIGINT on an infinite compute loop ends `noetic run` at once with one
    clear line on stderr (no traceback) and exit status 130."""
    doc = tmp_path / "forever.json"
    doc.write_text(json.dumps(INFINITE_COMPUTE))
    proc = subprocess.Popen(
        [sys.executable, "-m", "noetic.cli", "run", str(doc), "--input", '{"n": 0}'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        started = wait_for_line(proc.stderr, "t:ready", timeout=60)  # the loop is spinning now
        assert "t:ready" in started and proc.poll() is None, started
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = started + rest.decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == "noetic: interrupted", err
