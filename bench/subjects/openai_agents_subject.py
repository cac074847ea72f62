"""OpenAI Agents SDK: an `Agent` with one `function_tool`, run by `Runner`, on a custom `Model`.

The SDK ships no public fake model, so `FakeModel` subclasses `agents.models.interface.Model`
(what its docs prescribe for custom providers), in the shape of the SDK's own test double.
Stream events are built with `model_construct`, as the `openai` client builds them from the
wire (no validation). Tracing is disabled through `RunConfig(tracing_disabled=True)`: its
default exporter would try to reach the network; noetic records no traces either.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

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

NAME = "openai-agents"

_RUN_CONFIG = RunConfig(tracing_disabled=True)


def _usage() -> Usage:
    return Usage(
        requests=1,
        input_tokens=INPUT_TOKENS,
        output_tokens=OUTPUT_TOKENS,
        total_tokens=INPUT_TOKENS + OUTPUT_TOKENS,
    )


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def _has_tool_result(input: str | list[TResponseInputItem]) -> bool:
    if isinstance(input, str) or not input:
        return False
    last: Any = input[-1]
    return isinstance(last, dict) and last.get("type") == "function_call_output"


class FakeModel(Model):
    """Plays the bench conversation; with `chunks`, streams the answer as those deltas."""

    def __init__(self, chunks: Sequence[str] = ()):
        self.chunks = chunks

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        if _has_tool_result(input):
            return ModelResponse(output=[_message(ANSWER)], usage=_usage(), response_id=None)
        call = ResponseFunctionToolCall(
            id="fc_1", type="function_call", call_id="call_1", name=TOOL_NAME, arguments=TOOL_ARGS
        )
        return ModelResponse(output=[call], usage=_usage(), response_id=None)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        final = _message("".join(self.chunks))
        started = _response([])
        seq = 0
        yield ResponseCreatedEvent.model_construct(
            type="response.created", response=started, sequence_number=seq
        )
        seq += 1
        yield ResponseOutputItemAddedEvent.model_construct(
            type="response.output_item.added", item=_message(""), output_index=0, sequence_number=seq
        )
        seq += 1
        yield ResponseContentPartAddedEvent.model_construct(
            type="response.content_part.added",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            part=ResponseOutputText(type="output_text", text="", annotations=[]),
            sequence_number=seq,
        )
        for chunk in self.chunks:
            seq += 1
            yield ResponseTextDeltaEvent.model_construct(
                type="response.output_text.delta",
                item_id="msg_1",
                output_index=0,
                content_index=0,
                delta=chunk,
                logprobs=[],
                sequence_number=seq,
            )
        seq += 1
        yield ResponseOutputItemDoneEvent.model_construct(
            type="response.output_item.done", item=final, output_index=0, sequence_number=seq
        )
        seq += 1
        yield ResponseCompletedEvent.model_construct(
            type="response.completed", response=_response([final]), sequence_number=seq
        )


def _response(output: list[Any]) -> Response:
    return Response.model_construct(
        id="resp_1",
        created_at=0,
        model="bench-fake",
        object="response",
        output=output,
        tool_choice="auto",
        tools=[],
        top_p=None,
        parallel_tool_calls=False,
        usage=ResponseUsage(
            input_tokens=INPUT_TOKENS,
            output_tokens=OUTPUT_TOKENS,
            total_tokens=INPUT_TOKENS + OUTPUT_TOKENS,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        ),
    )


@asynccontextmanager
async def session() -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """S1/S3: one agent, one `Runner.run` per round trip."""
    agent = Agent(name="bench", instructions=INSTRUCTIONS, model=FakeModel(), tools=[function_tool(add)])

    async def run_once(i: int) -> str:
        result = await Runner.run(agent, QUESTION, run_config=_RUN_CONFIG)
        return str(result.final_output)

    yield run_once


async def stream(chunks: Sequence[str]) -> tuple[int, str]:
    """S2: `Runner.run_streamed` and the raw `response.output_text.delta` events."""
    agent = Agent(name="bench", instructions=INSTRUCTIONS, model=FakeModel(chunks))
    result = Runner.run_streamed(agent, QUESTION, run_config=_RUN_CONFIG)
    seen = 0
    async for event in result.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            seen += 1
    return seen, str(result.final_output)
