"""LangGraph: the ReAct graph of its docs (`StateGraph(MessagesState)`, an agent node calling a
chat model bound to the tools, the prebuilt `ToolNode` and `tools_condition`), on a fake chat
model.

`FakeChatModel` subclasses langchain-core's `BaseChatModel` (the documented way to write a chat
model) with async `_agenerate` / `_astream`, and binds tools like a provider integration does.
S2 consumes `graph.astream(..., stream_mode="messages")`, LangGraph's token-streaming mode.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

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

NAME = "langgraph"

_USAGE = {
    "input_tokens": INPUT_TOKENS,
    "output_tokens": OUTPUT_TOKENS,
    "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
}


class FakeChatModel(BaseChatModel):
    """Plays the bench conversation; with `chunks`, streams the answer as those deltas."""

    chunks: Sequence[str] = ()

    @property
    def _llm_type(self) -> str:
        return "bench-fake"

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(ANSWER, usage_metadata=_USAGE)  # type: ignore[arg-type]
        call = {"name": TOOL_NAME, "args": json.loads(TOOL_ARGS), "id": "call_1", "type": "tool_call"}
        return AIMessage("", tool_calls=[call], usage_metadata=_USAGE)  # type: ignore[arg-type]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self.chunks:
            generation = ChatGenerationChunk(message=AIMessageChunk(content=chunk))
            if run_manager is not None:
                await run_manager.on_llm_new_token(chunk, chunk=generation)
            yield generation
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=_USAGE))  # type: ignore[arg-type]

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def _graph(model: FakeChatModel, with_tools: bool) -> Any:
    tools = (
        [StructuredTool.from_function(add, name=TOOL_NAME, description=TOOL_DESCRIPTION)]
        if with_tools
        else []
    )
    bound = model.bind_tools(tools) if tools else model

    async def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        reply = await bound.ainvoke([SystemMessage(INSTRUCTIONS), *state["messages"]])
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    if tools:
        builder.add_node("tools", ToolNode(tools))
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
    return builder.compile()


@asynccontextmanager
async def session() -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """S1/S3: one compiled graph, one `ainvoke` per round trip."""
    graph = _graph(FakeChatModel(), with_tools=True)

    async def run_once(i: int) -> str:
        state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]})
        return str(state["messages"][-1].content)

    yield run_once


async def stream(chunks: Sequence[str]) -> tuple[int, str]:
    """S2: `astream(stream_mode="messages")`, counting the message chunks with text."""
    graph = _graph(FakeChatModel(chunks=chunks), with_tools=False)
    seen = 0
    parts: list[str] = []
    async for message, _meta in graph.astream({"messages": [HumanMessage(QUESTION)]}, stream_mode="messages"):
        if isinstance(message, AIMessageChunk) and message.content:
            seen += 1
            parts.append(str(message.content))
    return seen, "".join(parts)
