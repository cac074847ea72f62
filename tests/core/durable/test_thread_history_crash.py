"""Turn k of a long thread, killed with SIGKILL, resumed by another process from the thread's
stored history pieces (HS-1, HS-2), on asyncio and on trio."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import json, os, signal, sys
    import anyio
    import noetic as nt
    from noetic.items import MessageItem, item_text
    from noetic.testing import ScriptedModel, text_reply

    calls = []

    def reply(request):
        calls.append(1)
        users = sum(1 for i in request.items if isinstance(i, MessageItem) and i.role == "user")
        return text_reply(f"reply-{users}")

    def after(text):
        if os.environ.get("KILL_AT") == text:
            os.kill(os.getpid(), signal.SIGKILL)  # the model step's entry is committed
        return text

    async def main(db, command, turns):
        graph = nt.sequence("g", [nt.call_model("m"), nt.run_code("after", after)])
        harness = nt.AgentHarness(
            "t", agent_graph=graph, model=ScriptedModel(default=reply), storage=f"sqlite:///{db}"
        )
        async with harness as h:
            if command == "run":
                for k in range(int(turns)):
                    await h.run(f"q{k}", thread_id="th", execution_id=f"e{k}")
                return
            resumed = await h.resume(turns)
            model_calls = len(calls)
            more = await h.run("one more", thread_id="th")
        print(json.dumps({
            "resumed": [item_text(i) for i in resumed.items],
            "model_calls": model_calls,
            "more": more.text,
        }))

    anyio.run(main, *sys.argv[2:5], backend=sys.argv[1])
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_turn_k_of_a_long_thread_resumes_in_another_process_after_sigkill(
    tmp_path: Path, backend: str
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    db = str(tmp_path / "run.db")

    def run(*args: str, kill_at: str = "") -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KILL_AT": kill_at}
        return subprocess.run(
            [sys.executable, str(script), backend, db, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    killed = run("run", "30", kill_at="reply-30")  # turn e29, once its model step committed
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = run("resume", "e29")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    expected = [text for k in range(30) for text in (f"q{k}", f"reply-{k + 1}")]
    assert out["resumed"] == expected  # the whole log turn 29 started from, and its committed reply
    assert out["model_calls"] == 0  # the model step replayed from its entry
    assert out["more"] == "reply-31"  # and the thread goes on from there
