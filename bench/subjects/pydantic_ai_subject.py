"""pydantic-ai: an `Agent` with one tool, driven by pydantic-ai's own `FunctionModel` test double.

S1 runs `agent.run(question)`; S2 runs `agent.run_stream(question)` and consumes
`result.stream_text(delta=True, debounce_by=None)` (no debouncing, so every delta reaches the
consumer, as in the other subjects). Model functions are `async def`: a plain `def` would be
run in a worker thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

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

NAME = "pydantic-ai"


def _usage() -> RequestUsage:
    return RequestUsage(input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS)


async def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts):
        return ModelResponse(parts=[TextPart(ANSWER)], usage=_usage())
    call = ToolCallPart(tool_name=TOOL_NAME, args=TOOL_ARGS, tool_call_id="call_1")
    return ModelResponse(parts=[call], usage=_usage())


def _agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(_model), instructions=INSTRUCTIONS)
    agent.tool_plain(name=TOOL_NAME)(add)
    return agent


@asynccontextmanager
async def session() -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """S1/S3: one agent, one `agent.run` per round trip."""
    agent = _agent()

    async def run_once(i: int) -> str:
        result = await agent.run(QUESTION)
        return result.output

    yield run_once


async def stream(chunks: Sequence[str]) -> tuple[int, str]:
    """S2: `run_stream` + `stream_text(delta=True, debounce_by=None)`."""

    async def deltas(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for chunk in chunks:
            yield chunk

    agent: Agent[None, str] = Agent(FunctionModel(stream_function=deltas), instructions=INSTRUCTIONS)
    seen = 0
    parts: list[str] = []
    async with agent.run_stream(QUESTION) as result:
        async for text in result.stream_text(delta=True, debounce_by=None):
            seen += 1
            parts.append(text)
    return seen, "".join(parts)
