"""Inspector test fixtures: a real store written by real runs, a real server, a real browser.

`write_store(path)` runs a ScriptedModel agent (a tool call whose output carries a hostile
`<script>`, then an answer; a context layer) checkpointed to `sqlite:///{path}`, a second
execution that fails, and a third that fails and is resumed.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import noetic as nt
import pytest
from noetic.layers import ContextLayer, LayerContext
from noetic.testing import ScriptedModel, text_reply, tool_call_reply

ROOT = Path(__file__).resolve().parents[2]

#: A tool output that would set a window flag and the title if it were ever run as markup.
HOSTILE = (
    '<script>window.__pwned = 1; document.title = "pwned"</script><img src=x onerror="window.__pwned=2">'
)


@dataclass(frozen=True)
class Written:
    """What the runs left in the store."""

    url: str
    ok_id: str
    failed_id: str
    resumed_id: str
    ok_cost: float
    ok_billed: float
    hostile: str = HOSTILE


class Glossary(ContextLayer):
    """A context layer that adds a fixed glossary to every model call."""

    id = "glossary"
    slot = 100

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return "noetic: of the mind. Answer in one sentence."


def _lookup(args: dict[str, object]) -> str:
    return HOSTILE


def _broken(value: object, ctx: nt.Context) -> object:
    raise RuntimeError("the report service is down")


async def write_store(path: Path) -> Written:
    """Run the two executions into the SQLite file `path`."""
    url = f"sqlite:///{path}"
    lookup = nt.tool("lookup", description="Look a word up.", input={"type": "object"}, execute=_lookup)
    model = ScriptedModel(
        [
            tool_call_reply(
                "lookup", {"word": "noetic"}, usage={"input_tokens": 120, "output_tokens": 18}, cost=0.00042
            ),
            text_reply(
                "It is about the intellect.", usage={"input_tokens": 160, "output_tokens": 12}, cost=0.00031
            ),
            text_reply(
                "Noetic means of the intellect.",
                usage={"input_tokens": 200, "output_tokens": 9},
                cost=0.00027,
            ),
        ]
    )
    agent = nt.sequence(
        "agent",
        [
            nt.call_model("research", instructions="Look the word up with the lookup tool.", tools=[lookup]),
            nt.call_model("answer", instructions="Answer in one sentence."),
        ],
    )
    async with nt.AgentHarness(
        "inspected", agent_graph=agent, model=model, storage=url, layers=[Glossary()]
    ) as h:
        ok = await h.run("What does noetic mean?", execution_id="exec-ok")
    failing = nt.sequence("pipeline", [nt.call_model("draft"), nt.run_code("report", _broken)])
    model2 = ScriptedModel(
        [text_reply("a draft", usage={"input_tokens": 10, "output_tokens": 3}, cost=0.0001)]
    )
    async with nt.AgentHarness("inspected", agent_graph=failing, model=model2, storage=url) as h:
        with contextlib.suppress(nt.NoeticError):
            await h.run("Look x up.", execution_id="exec-failed")
    down = {"fail": True}

    def report(value: object) -> object:
        if down["fail"]:
            raise RuntimeError("the report service is down")
        return value

    resumable = nt.sequence("pipeline", [nt.call_model("draft"), nt.run_code("report", report)])
    model3 = ScriptedModel([text_reply("a draft", cost=0.0002)])
    async with nt.AgentHarness("inspected", agent_graph=resumable, model=model3, storage=url) as h:
        with contextlib.suppress(nt.NoeticError):
            await h.run("Draft it.", execution_id="exec-resumed")
        down["fail"] = False
        await h.resume("exec-resumed")  # `draft` replays from the ledger, `report` runs again
    return Written(url, "exec-ok", "exec-failed", "exec-resumed", ok.cost, ok.billed_cost)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """Three executions in a SQLite file: one completed with a hostile tool output, one failed,
    one failed and then resumed to completion."""
    path = tmp_path_factory.mktemp("store") / "runs.db"
    return anyio.run(write_store, path)


def free_port() -> int:
    """A port nobody listens on right now (on 127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`python -m noetic_inspector ...` (or `command ...`) running on 127.0.0.1:`port`."""

    def __init__(
        self, args: list[str], command: tuple[str, ...] = (sys.executable, "-m", "noetic_inspector")
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [*command, *args, "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/api/executions", timeout=1)
                return
            except httpx.TransportError:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        self.process.stderr.read().decode() if self.process.stderr else ""
                    ) from None
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the inspector did not start within 20 s")

    def stop(self) -> None:
        """Stop the server process (this test's own, by its pid)."""
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def server_type() -> type[Server]:
    """The `Server` class, for tests that start their own."""
    return Server


@pytest.fixture(scope="module")
def server(written: Written) -> Iterator[Server]:
    """The inspector over the written store, with the demo workflow document."""
    running = Server([written.url, "--workflow", str(ROOT / "examples" / "batch.json")])
    yield running
    running.stop()


CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1000",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium session for the module (installed by scripts/ensure-chromium.sh)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = subprocess.run(
        [str(ROOT / "scripts" / "ensure-chromium.sh")], check=True, capture_output=True, text=True
    ).stdout.split()
    chromium, chromedriver = found[0], found[1]
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory() as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service(chromedriver), options=options)
        try:
            yield driver
        finally:
            driver.quit()
