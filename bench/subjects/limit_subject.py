"""The limit: a hand-written asyncio agent loop doing the same work with nothing in between.

It keeps the conversation as a list of dicts, calls an async-generator fake model, validates
the tool arguments with a pydantic model, calls the tool, JSON-encodes its result and loops
until the model answers. Streaming hands each delta from the agent task to the consumer task
through a deque and an event, as a framework's stream must. No framework does less work and
stays correct; the report gives noetic's ratio to this.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from pydantic import BaseModel

from subjects.common import (
    ANSWER,
    INPUT_TOKENS,
    INSTRUCTIONS,
    OUTPUT_TOKENS,
    QUESTION,
    TOOL_ARGS,
    TOOL_NAME,
    add,
)

NAME = "limit"

Message = dict[str, Any]
_USAGE = {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}


class AddArgs(BaseModel):
    """Arguments of the `add` tool."""

    a: int
    b: int


async def _model(messages: list[Message], chunks: Sequence[str]) -> AsyncIterator[Any]:
    """Deltas (strings), then the final output message."""
    if messages[-1]["type"] != "function_call_output" and not chunks:
        yield {
            "type": "function_call",
            "call_id": "call_1",
            "name": TOOL_NAME,
            "arguments": TOOL_ARGS,
            "usage": _USAGE,
        }
        return
    for chunk in chunks:
        yield chunk
    yield {"type": "message", "role": "assistant", "content": "".join(chunks) or ANSWER, "usage": _USAGE}


async def _agent(
    question: str, chunks: Sequence[str] = (), on_delta: Callable[[str], None] | None = None
) -> str:
    messages: list[Message] = [
        {"type": "message", "role": "system", "content": INSTRUCTIONS},
        {"type": "message", "role": "user", "content": question},
    ]
    usage = {"input_tokens": 0, "output_tokens": 0}
    while True:
        final: Message = {}
        async for event in _model(messages, chunks):
            if type(event) is str:
                if on_delta is not None:
                    on_delta(event)
            else:
                final = event
        for key in usage:
            usage[key] += final["usage"][key]
        messages.append(final)
        if final["type"] == "message":
            return str(final["content"])
        args = AddArgs.model_validate_json(final["arguments"])
        output = json.dumps(add(args.a, args.b))
        messages.append({"type": "function_call_output", "call_id": final["call_id"], "output": output})


@asynccontextmanager
async def session() -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """S1/S3: one agent-loop call per round trip."""

    async def run_once(i: int) -> str:
        return await _agent(QUESTION)

    yield run_once


async def stream(chunks: Sequence[str]) -> tuple[int, str]:
    """S2: the agent task publishes deltas; this task consumes them."""
    pending: deque[str | None] = deque()
    wake = asyncio.Event()

    def publish(delta: str | None) -> None:
        pending.append(delta)
        wake.set()

    async def agent() -> str:
        try:
            return await _agent(QUESTION, chunks, publish)
        finally:
            publish(None)

    task = asyncio.create_task(agent())
    seen = 0
    while True:
        await wake.wait()
        wake.clear()
        while pending:
            if pending.popleft() is None:
                return seen, await task
            seen += 1
