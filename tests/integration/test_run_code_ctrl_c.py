"""Ctrl-C during a blocking `run_code(..., in_thread=True)` body, in a real process.

The turn ends at once (its checkpoint kept, so `resume` finishes it later) while the body is
still running in its thread; the body runs on to its end, since a thread cannot be interrupted.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import anyio, noetic as nt

    backend, db, mode = sys.argv[1:4]
    release = Path(db + ".release")

    def blocking(x):
        print("body started", flush=True)
        while mode == "run" and not release.exists():  # blocks until the test releases it
            time.sleep(0.01)
        print("body finished", flush=True)
        return x * 10

    graph = nt.sequence("s", [nt.run_code("a", lambda x: x + 1), nt.run_code("slow", blocking, in_thread=True)])

    async def main():
        async with nt.AgentHarness("svc", agent_graph=graph, storage=f"sqlite:///{db}") as h:
            if mode == "resume":
                print("resumed", (await h.resume("e1")).output, flush=True)
                return
            try:
                await h.run(1, execution_id="e1")
            finally:
                print("turn ended", flush=True)

    try:
        anyio.run(main, backend=backend)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_ends_the_turn_while_the_thread_body_runs_on_and_resume_finishes_it(
    tmp_path: Path, backend: str
) -> None:
    script, db = tmp_path / "app.py", str(tmp_path / "app.db")
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), backend, db, "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "body started"
        time.sleep(0.3)  # let the step settle into its wait for the thread (setup, not a timing)
        proc.send_signal(signal.SIGINT)
        seen = [proc.stdout.readline().strip() for _ in range(2)]
        assert seen == ["turn ended", "interrupted"]  # the body has not finished: it is still blocked
        Path(db + ".release").touch()
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    # asyncio waits for the thread at exit; trio's worker threads end with the process
    assert rest.strip() in ("body finished", "")
    resumed = subprocess.run(
        [sys.executable, str(script), backend, db, "resume"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip().splitlines()[-1] == "resumed 20"
