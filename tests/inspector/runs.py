"""Real runs written to a real SQLite store, for the inspector's tests.

`write_store(path)` runs a ScriptedModel agent that calls a tool whose output carries a hostile
`<script>`, with the scratchpad context layer, checkpointed to `sqlite:///{path}`; then a
second execution whose tool raises (a failed turn). Returns what the store must show.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import noetic as nt
from noetic.layers import ContextLayer, LayerContext
from noetic.testing import ScriptedModel, text_reply, tool_call_reply

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
    ok_cost: float
    ok_billed: float


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
    return Written(url, "exec-ok", "exec-failed", ok.cost, ok.billed_cost)
