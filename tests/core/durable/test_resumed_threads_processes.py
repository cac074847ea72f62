"""TH-1 across processes on one SQLite file: a turn killed with SIGKILL, a later turn run by
another process, then the killed execution resumed by a third — the thread keeps every turn,
on asyncio and on trio."""

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

    def reply(request):
        users = [i for i in request.items if isinstance(i, MessageItem) and i.role == "user"]
        return text_reply("re:" + item_text(users[-1]))

    def after(text):
        if os.environ.get("KILL_AT") == text:
            os.kill(os.getpid(), signal.SIGKILL)  # the model step's entry is committed
        return text

    async def main(db, command, execution_id, text):
        model = ScriptedModel(default=reply)
        graph = nt.sequence("g", [nt.call_model("m"), nt.run_code("after", after)])
        async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=f"sqlite:///{db}") as h:
            if command == "run":
                response = await h.run(text, thread_id="th", execution_id=execution_id)
            else:
                response = await h.resume(execution_id)
        seen = [item_text(i) for i in model.calls[-1].items] if model.calls else None
        print(json.dumps({"items": [item_text(i) for i in response.items], "model_saw": seen}))

    anyio.run(main, *sys.argv[2:6], backend=sys.argv[1])
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_th_1_a_killed_turn_resumed_after_another_process_moved_the_thread_on(
    tmp_path: Path, backend: str
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    db = str(tmp_path / "run.db")

    def run(*args: str, kill_at: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), backend, db, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "KILL_AT": kill_at},
        )

    def output(*args: str) -> dict[str, list[str]]:
        done = run(*args)
        assert done.returncode == 0, done.stderr
        result: dict[str, list[str]] = json.loads(done.stdout)
        return result

    output("run", "e1", "one")
    killed = run("run", "e2", "two", kill_at="re:two")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert output("run", "e3", "three")["model_saw"] == ["one", "re:one", "three"]  # "two" never stored
    resumed = output("resume", "e2", "-")
    assert resumed["items"] == ["one", "re:one", "two", "re:two"]  # its own log (RS-14)
    assert resumed["model_saw"] is None  # the model step replayed from its entry
    final = output("run", "e4", "four")
    assert final["model_saw"] == ["one", "re:one", "three", "re:three", "two", "re:two", "four"]
