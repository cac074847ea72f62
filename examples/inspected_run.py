"""A checkpointed run to look at with the inspector: `noetic inspect sqlite:///runs.db`.

    scripts/bootstrap.sh python examples/inspected_run.py [runs.db]
    scripts/bootstrap.sh noetic inspect sqlite:///runs.db      # then open http://127.0.0.1:8765/

Offline (the scripted model): an agent looks a word up with a tool, then answers, with a small
context layer, checkpointed to a SQLite file. Each run adds one execution to the file.
"""

from __future__ import annotations

import sys

import anyio
import noetic as nt
from noetic.layers import ContextLayer, LayerContext
from noetic.testing import ScriptedModel, text_reply, tool_call_reply


class Glossary(ContextLayer):
    """A context layer that adds a short glossary to every model call."""

    id = "glossary"
    slot = 100

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return "noetic: of the mind or the intellect."


def lookup(args: dict[str, object]) -> dict[str, object]:
    """The `lookup` tool: a dictionary with one word in it."""
    return {"word": args.get("word"), "meaning": "of the intellect"}


model = ScriptedModel(
    [
        tool_call_reply(
            "lookup", {"word": "noetic"}, usage={"input_tokens": 120, "output_tokens": 18}, cost=0.00042
        ),
        text_reply(
            "It is about the intellect.", usage={"input_tokens": 160, "output_tokens": 12}, cost=0.00031
        ),
        text_reply(
            "Noetic means: of the intellect.", usage={"input_tokens": 200, "output_tokens": 9}, cost=0.00027
        ),
    ]
)
agent = nt.sequence(
    "agent",
    [
        nt.call_model(
            "research",
            instructions="Look the word up.",
            tools=[
                nt.tool("lookup", description="Look a word up.", input={"type": "object"}, execute=lookup)
            ],
        ),
        nt.call_model("answer", instructions="Answer in one sentence."),
    ],
)


async def main(path: str) -> None:
    """Run one turn into the SQLite file `path` and say how to look at it."""
    storage = f"sqlite:///{path}"
    async with nt.AgentHarness(
        "inspected", agent_graph=agent, model=model, storage=storage, layers=[Glossary()]
    ) as h:
        response = await h.run("What does noetic mean?")
    print(f"answer: {response.text}")
    print(f"execution {response.execution_id} is in {path}; look at it with: noetic inspect {storage}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "runs.db")
