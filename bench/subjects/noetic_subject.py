"""noetic: `call_model` with one tool, run by an `AgentHarness`, with an in-process fake adapter.

Each S1 run is `h.run(question, thread_id=...)` on a fresh thread of one long-lived harness,
the documented way to run independent conversations (a thread's history carries across its
turns, so reusing one thread would grow the history run after run). S2 consumes
`h.get_full_stream()` (every `StreamEvent`; the deltas are the `source == "sdk"` events);
`stream_items` consumes `h.get_item_stream()` instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import noetic as nt
from noetic.items import FunctionCallItem, FunctionCallOutputItem, MessageItem, OutputText
from noetic.model import AbortSignal, ModelEvent, ModelRequest, ModelResponse, TextDelta
from noetic.usage import RoundUsage
from pydantic import BaseModel

from subjects.common import (
    ANSWER,
    INPUT_TOKENS,
    INSTRUCTIONS,
    OUTPUT_TOKENS,
    QUESTION,
    TOOL_ARGS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    add,
)

NAME = "noetic"

_USAGE = RoundUsage(input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS)


class AddArgs(BaseModel):
    """Arguments of the `add` tool."""

    a: int
    b: int


class FakeModel:
    """A model adapter (the `noetic.model` contract) that plays the bench conversation.

    With `chunks`, the answer streams as those text deltas instead of arriving whole.
    """

    model_id = "bench-fake"

    def __init__(self, chunks: Sequence[str] = ()):
        self.chunks = chunks

    async def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        """One round: a tool call first, the answer once a tool result is in the request."""
        if type(request.items[-1]) is not FunctionCallOutputItem and not self.chunks:
            call = FunctionCallItem(call_id="call_1", name=TOOL_NAME, arguments=TOOL_ARGS)
            yield ModelResponse(items=(call,), usage=_USAGE, model_id=self.model_id)
            return
        text = ANSWER
        if self.chunks:
            message_id = "msg_stream"
            for chunk in self.chunks:
                yield TextDelta(chunk, message_id)
            text = "".join(self.chunks)
        message = MessageItem(role="assistant", content=[OutputText(text=text)])
        yield ModelResponse(items=(message,), usage=_USAGE, model_id=self.model_id)


def _agent() -> nt.Step:
    add_tool = nt.tool(
        TOOL_NAME,
        description=TOOL_DESCRIPTION,
        input=AddArgs,
        execute=lambda args: add(args.a, args.b),
    )
    return nt.call_model("answer", instructions=INSTRUCTIONS, tools=[add_tool])


@asynccontextmanager
async def session(**options: Any) -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """S1/S3: one harness (built with `options`); each run is a turn on its own thread."""
    async with nt.AgentHarness("bench", agent_graph=_agent(), model=FakeModel(), **options) as h:

        async def run_once(i: int) -> str:
            response = await h.run(QUESTION, thread_id=f"t{i}")
            return response.text

        yield run_once


async def stream(chunks: Sequence[str]) -> tuple[int, str]:
    """S2 through `get_full_stream()`: count the model deltas, then read the response."""
    agent = nt.call_model("answer", instructions=INSTRUCTIONS)
    async with nt.AgentHarness("bench", agent_graph=agent, model=FakeModel(chunks)) as h:
        await h.execute(QUESTION)
        seen = 0
        async for event in h.get_full_stream():
            if event.source == "sdk":
                seen += 1
        response = await h.get_agent_response()
        return seen, response.text


async def stream_items(chunks: Sequence[str]) -> tuple[int, str]:
    """S2 through `get_item_stream()`: count the in-progress assistant snapshots."""
    agent = nt.call_model("answer", instructions=INSTRUCTIONS)
    async with nt.AgentHarness("bench", agent_graph=agent, model=FakeModel(chunks)) as h:
        await h.execute(QUESTION)
        seen = 0
        async for item in h.get_item_stream():
            if not item.is_complete:
                seen += 1
        response = await h.get_agent_response()
        return seen, response.text
