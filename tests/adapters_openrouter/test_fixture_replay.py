"""Every recorded OpenRouter exchange in `fixtures/` replayed through the adapter.

Each test names the fixture it replays, rebuilds the request the recording was made with,
checks the body the adapter sends against the recorded one, and asserts the items, usage
(TU-2: `None` when absent, `0` when reported zero), cost and billed cost (TU-8) or the error
that the recording implies. Streams are replayed whole and in awkward chunk sizes (1 byte
splits every line and every multi-byte UTF-8 sequence).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from noetic.items import (
    ExtensionItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputText,
    Item,
    MessageItem,
    OtherPart,
    ReasoningItem,
    system_message,
    user_message,
)
from noetic.model import ModelEvent, ModelRequest, ModelResponse, ReasoningDelta, TextDelta, ToolDefinition
from noetic.testing.model_conformance import RecordingBilling, collect_round
from noetic.usage import RoundUsage
from noetic_adapters_openrouter import OpenRouterModel, OpenRouterProvider, RetryPolicy
from noetic_adapters_openrouter.params import split_params
from noetic_adapters_openrouter.responses import input_items, output_items
from noetic_adapters_openrouter.tool_names import ToolNames

pytestmark = pytest.mark.anyio

TEST_KEY = "sk-or-v1-placeholder-not-a-real-key-0000"
STREAM_CHUNKS = [None, 1, 7]


def model_for(cassette: Any, model_id: str, api: str, *, stream: bool) -> OpenRouterModel:
    provider = OpenRouterProvider(
        api_key=TEST_KEY,
        http_client=cassette.client,
        retry=RetryPolicy(max_attempts=3, base_delay=0.0),
    )
    return provider.model(model_id, api=api, stream=stream)  # type: ignore[arg-type]


def final(events: Sequence[ModelEvent]) -> ModelResponse:
    assert isinstance(events[-1], ModelResponse)
    assert sum(isinstance(e, ModelResponse) for e in events) == 1
    return events[-1]


def texts(events: Sequence[ModelEvent], kind: type[TextDelta] | type[ReasoningDelta]) -> str:
    return "".join(e.text for e in events if type(e) is kind)


def assistant(items: Sequence[Item]) -> MessageItem:
    (message,) = [i for i in items if isinstance(i, MessageItem) and i.role == "assistant"]
    return message


def same_keys(sent: Mapping[str, Any], recorded: Mapping[str, Any], keys: Sequence[str]) -> None:
    for key in keys:
        assert sent.get(key) == recorded.get(key), f"body field {key!r} differs from the recording"


def usage_of(response: ModelResponse) -> tuple[Any, ...]:
    u = response.usage
    return (u.input_tokens, u.output_tokens, u.cached_tokens, u.cache_write_tokens, u.reasoning_tokens)


# --- Responses API ----------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", STREAM_CHUNKS)
async def test_responses_raw_cot_stream(cassettes: Callable[..., Any], chunk: int | None) -> None:
    """test_openai_responses_raw_cot_stream_openrouter.yaml: Responses SSE, reasoning + text."""
    cassette = cassettes("test_openai_responses_raw_cot_stream_openrouter.yaml", chunk)
    model = model_for(cassette, "openai/gpt-oss-20b", "responses", stream=True)
    events, error = await collect_round(
        model, ModelRequest("openai/gpt-oss-20b", [user_message("What is 2+2?")])
    )
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == cassette.recorded_body(0)  # exactly the recorded body
    response = final(events)
    reasoning_text = 'The user asks: "What is 2+2?" They expect a straightforward answer: 4. Just answer 4.'
    assert texts(events, ReasoningDelta) == reasoning_text
    assert texts(events, TextDelta) == "4"
    reasoning, message = response.items
    # final items come from response.completed, not from the placeholder ids of the deltas
    assert isinstance(reasoning, ReasoningItem)
    assert reasoning.id == "rs_tmp_ku4i7pagjwn"
    assert reasoning.content == [OtherPart(type="reasoning_text", text=reasoning_text)]
    assert isinstance(message, MessageItem)
    assert message.id == "msg_tmp_8cjof4f6zpw"
    assert message.text == "4"
    assert usage_of(response) == (78, 37, 0, None, 22)  # cached reported 0, cache write absent
    assert response.cost == response.billed_cost == 0.0000113
    assert response.generation_id == "gen-1764265411-Fu1iEX7h5MRWiL79lb94"


async def test_responses_reasoning_item_replays_exactly(cassettes: Callable[..., Any]) -> None:
    """test_openai_responses_raw_cot_stream_openrouter.yaml: the reasoning item goes back as received."""
    cassette = cassettes("test_openai_responses_raw_cot_stream_openrouter.yaml")
    model = model_for(cassette, "openai/gpt-oss-20b", "responses", stream=True)
    events, _ = await collect_round(model, ModelRequest("openai/gpt-oss-20b", [user_message("What is 2+2?")]))
    items = final(events).items
    body = model._endpoint.body(
        ModelRequest("openai/gpt-oss-20b", [user_message("What is 2+2?"), *items, user_message("And 3+3?")]),
        ToolNames(),
        split_params({}),
        stream=True,
    )
    recorded_output = _completed_output(cassette)
    assert body["input"][1] == recorded_output[0]  # byte-faithful: no status or fields added
    assert body["input"][2] == {"role": "assistant", "content": "4"}


def _completed_output(cassette: Any) -> list[dict[str, Any]]:
    stream = cassette.interactions[0]["response"]["body"]["string"]
    for line in stream.splitlines():
        if line.startswith("data: {") and '"response.completed"' in line:
            output: list[dict[str, Any]] = json.loads(line[6:])["response"]["output"]
            return output
    raise AssertionError("the recording has no response.completed")


async def test_responses_prompt_cache_e2e(cassettes: Callable[..., Any]) -> None:
    """test_openrouter_responses_prompt_cache_e2e.yaml: non-streamed, cache write then read."""
    cassette = cassettes("test_openrouter_responses_prompt_cache_e2e.yaml")
    recorded = cassette.recorded_body(0)
    parts = [InputText.model_validate(p) for p in recorded["input"][0]["content"]]
    params = {k: recorded[k] for k in ("include", "prompt_cache_options", "provider")}
    model = model_for(cassette, "openai/gpt-5.6-sol", "responses", stream=False)
    request = ModelRequest("openai/gpt-5.6-sol", [MessageItem(role="user", content=parts)], params=params)
    first_events, error = await collect_round(model, request)
    assert error is None
    second_events, error = await collect_round(model, request)
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent == [cassette.recorded_body(0), cassette.recorded_body(1)]
    first, second = final(first_events), final(second_events)
    assert usage_of(first) == (4020, 5, 0, 4012, 0)  # cache written
    assert usage_of(second) == (4020, 5, 4012, None, 0)  # cache read; write key absent -> None
    assert (first.cost, second.cost) == (0.025265, 0.002196)
    message = assistant(first.items)
    assert message.text == "OK"
    assert message.model_extra == {"phase": "final_answer"}
    assert first.generation_id == "gen-1784286312-3R0SU4Mb8ucOpEJ79d2o"


# --- Chat Completions -------------------------------------------------------------------------


async def test_chat_usage(cassettes: Callable[..., Any]) -> None:
    """test_openrouter_usage.yaml: cost absent on call 1 (None), present on call 2."""
    cassette = cassettes("test_openrouter_usage.yaml")
    model = model_for(cassette, "openai/gpt-5-mini", "chat", stream=False)
    venus = ModelRequest(
        "openai/gpt-5-mini", [user_message("Tell me about Venus")], instructions="Be helpful."
    )
    mars = ModelRequest(
        "openai/gpt-5-mini",
        [system_message("Be helpful."), user_message("Tell me about Mars")],
        params={"usage": {"include": True}},
    )
    first_events, _ = await collect_round(model, venus)
    second_events, _ = await collect_round(model, mars)
    cassette.assert_consumed()
    assert cassette.sent == [cassette.recorded_body(0), cassette.recorded_body(1)]
    first, second = final(first_events), final(second_events)
    assert usage_of(first) == (17, 1515, None, None, 704)
    assert first.cost is None
    assert first.billed_cost is None
    assert usage_of(second) == (17, 2177, 0, None, 960)
    assert second.cost == second.billed_cost == 0.00435825
    reasoning = second.items[0]
    assert isinstance(reasoning, ReasoningItem)
    assert reasoning.summary
    assert reasoning.summary[0].model_dump()["text"].startswith("**Exploring Mars Overview**")
    assert reasoning.encrypted_content
    assert reasoning.encrypted_content.startswith("gAAAAABpEgl8")
    assert reasoning.id == "rs_029b1b33873fe02b0169120967d9a88197af3d9f4db7a92055"
    assert assistant(second.items).text.startswith("Here\u2019s a concise but thorough overview of Mars")


DIVIDE = ToolDefinition(
    "divide",
    "Divide two numbers.",
    {
        "additionalProperties": False,
        "description": "Divide two numbers.",
        "properties": {
            "denominator": {"type": "number"},
            "numerator": {"type": "number"},
            "on_inf": {"default": "infinity", "enum": ["error", "infinity"], "type": "string"},
        },
        "required": ["numerator", "denominator"],
        "type": "object",
    },
)


async def test_chat_tool_calling(cassettes: Callable[..., Any]) -> None:
    """test_openrouter_tool_calling.yaml: one tool call, empty content, minimal usage."""
    cassette = cassettes("test_openrouter_tool_calling.yaml")
    model = model_for(cassette, "mistralai/mistral-small", "chat", stream=False)
    request = ModelRequest(
        "mistralai/mistral-small",
        [user_message("What is 123 / 456?")],
        tools=[DIVIDE],
        params={"tool_choice": "auto"},
    )
    events, error = await collect_round(model, request)
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == cassette.recorded_body(0)
    response = final(events)
    (call,) = response.items
    assert isinstance(call, FunctionCallItem)
    assert (call.name, call.call_id) == ("divide", "3sniiMddS")
    assert json.loads(call.arguments) == {"numerator": 123, "denominator": 456, "on_inf": "infinity"}
    assert usage_of(response) == (134, 43, None, None, None)
    assert response.cost is None


def _tool(function: Mapping[str, Any]) -> ToolDefinition:
    return ToolDefinition(
        function["name"], function["description"], function["parameters"], function.get("strict")
    )


async def test_chat_google_nested_schema_byok(cassettes: Callable[..., Any]) -> None:
    """test_openrouter_google_nested_schema.yaml: a full tool round trip on a BYOK key."""
    cassette = cassettes("test_openrouter_google_nested_schema.yaml")
    recorded = cassette.recorded_body(0)
    tools = [_tool(t["function"]) for t in recorded["tools"]]
    model = model_for(cassette, "google/gemini-2.5-flash", "chat", stream=False)
    question = user_message(recorded["messages"][0]["content"])
    first_events, _ = await collect_round(
        model,
        ModelRequest("google/gemini-2.5-flash", [question], tools=tools, params={"tool_choice": "required"}),
    )
    first = final(first_events)
    (call,) = first.items
    assert isinstance(call, FunctionCallItem)
    assert call.name == "insert_level_with_spaces"
    output = FunctionCallOutputItem(
        call_id=call.call_id, output=cassette.recorded_body(1)["messages"][2]["content"]
    )
    second_events, _ = await collect_round(
        model,
        ModelRequest(
            "google/gemini-2.5-flash",
            [question, call, output],
            tools=tools,
            params={"tool_choice": "required"},
        ),
    )
    cassette.assert_consumed()
    assert cassette.sent == [cassette.recorded_body(0), cassette.recorded_body(1)]
    second = final(second_events)
    (final_call,) = second.items
    assert isinstance(final_call, FunctionCallItem)
    assert final_call.name == "final_result"
    # BYOK: OpenRouter charged 0; the inference was paid on the user's own provider key
    assert first.cost == first.billed_cost == 0
    assert usage_of(first) == (326, 91, 0, None, 0)
    assert second.cost == 0
    assert usage_of(second) == (480, 33, 0, None, 0)


async def test_chat_errors_raised_429(cassettes: Callable[..., Any]) -> None:
    """test_openrouter_errors_raised.yaml: 429 three times -> retried, then model_rate_limit."""
    cassette = cassettes("test_openrouter_errors_raised.yaml")
    model = model_for(cassette, "google/gemini-2.0-flash-exp:free", "chat", stream=False)
    request = ModelRequest(
        "google/gemini-2.0-flash-exp:free", [user_message("Tell me a joke.")], instructions="Be helpful."
    )
    billing = RecordingBilling()
    request.billing = billing
    events, error = await collect_round(model, request)
    cassette.assert_consumed()  # the first try and two retries
    assert events == []
    assert error is not None
    assert error.code == "model_rate_limit"
    assert error.status == 429
    assert error.provider_name == "Google"
    assert error.in_stream is False
    assert "Provider returned error" in error.message
    assert "temporarily rate-limited upstream" in error.message
    assert billing.holds == []  # rejected before generation: nothing held, nothing billed


@pytest.mark.parametrize("chunk", STREAM_CHUNKS)
async def test_chat_stream_error_in_band(cassettes: Callable[..., Any], chunk: int | None) -> None:
    """test_openrouter_stream_error.yaml: an error chunk on HTTP 200 after output, with usage."""
    cassette = cassettes("test_openrouter_stream_error.yaml", chunk)
    model = model_for(cassette, "minimax/minimax-m2:free", "chat", stream=True)
    billing = RecordingBilling()
    request = ModelRequest(
        "minimax/minimax-m2:free",
        [user_message("Hello there")],
        params={"max_output_tokens": 10},
        billing=billing,
    )
    events, error = await collect_round(model, request)
    cassette.assert_consumed()
    assert cassette.sent[0] == cassette.recorded_body(0)
    assert texts(events, ReasoningDelta) == "We need to respond to a greeting. The user"
    assert not any(isinstance(e, ModelResponse) for e in events)
    assert error is not None
    assert error.code == "model_error"
    assert "Token limit reached" in error.message
    assert error.in_stream is True
    assert error.provider_code == 400
    assert error.generation_id == "gen-1762179802-UN8pkJI4AGZvryk0kFnb"
    assert error.usage == RoundUsage(input_tokens=43, output_tokens=10, cached_tokens=0, reasoning_tokens=11)
    assert error.cost == 0
    # the in-band usage settled the bill: charged (0), nothing left held
    assert [(h.amount, h.settled) for h in billing.holds] == [(0.0, (0.0, 0.0))]


@pytest.mark.parametrize("chunk", STREAM_CHUNKS)
async def test_chat_streaming_reasoning_signature(cassettes: Callable[..., Any], chunk: int | None) -> None:
    """test_openrouter_streaming_reasoning.yaml: reasoning.text deltas, the late signature kept."""
    cassette = cassettes("test_openrouter_streaming_reasoning.yaml", chunk)
    model = model_for(cassette, "anthropic/claude-sonnet-4.5", "chat", stream=True)
    request = ModelRequest(
        "anthropic/claude-sonnet-4.5", [user_message("What is 2+2?")], params={"reasoning": {"enabled": True}}
    )
    events, error = await collect_round(model, request)
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == cassette.recorded_body(0)
    response = final(events)
    reasoning, message = response.items
    assert isinstance(message, MessageItem)
    thought = "This is a simple arithmetic question. 2+2 equals 4."
    assert texts(events, ReasoningDelta) == thought
    assert isinstance(reasoning, ReasoningItem)
    (detail,) = reasoning.model_extra["reasoning_details"]  # type: ignore[index]
    assert detail["text"] == thought
    assert detail["format"] == "anthropic-claude-v1"
    assert detail["signature"].startswith(
        "Et0BCkgIChACGAIqQA2s7h7tA7IG35fbwVkou9PM2hANVJNUwcEM4q12fTRDK6y3v6YoEvJ"
    )
    assert texts(events, TextDelta) == message.text
    assert message.text.endswith("+ 2 = 4")
    assert usage_of(response) == (43, 36, 0, None, 13)
    assert response.cost == 0.000669
    # replayed unmodified on the next assistant turn
    follow = model._endpoint.body(
        ModelRequest("anthropic/claude-sonnet-4.5", [user_message("What is 2+2?"), *response.items]),
        ToolNames(),
        split_params({}),
        stream=True,
    )
    assert follow["messages"][1] == {
        "role": "assistant",
        "content": message.text,
        "reasoning_details": [detail],
    }


@pytest.mark.parametrize("chunk", STREAM_CHUNKS)
async def test_chat_stream_with_encrypted_reasoning(cassettes: Callable[..., Any], chunk: int | None) -> None:
    """test_openrouter_stream_with_reasoning.yaml: an encrypted reasoning detail, then ~100 text deltas."""
    cassette = cassettes("test_openrouter_stream_with_reasoning.yaml", chunk)
    model = model_for(cassette, "openai/o3", "chat", stream=True)
    events, error = await collect_round(model, ModelRequest("openai/o3", [user_message("Who are you")]))
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == cassette.recorded_body(0)
    response = final(events)
    reasoning, message = response.items
    assert isinstance(message, MessageItem)
    assert isinstance(reasoning, ReasoningItem)
    assert reasoning.id == "rs_0aa4f2c435e6d1dc0169082486816c8193a029b5fc4ef1764f"
    assert reasoning.encrypted_content
    assert reasoning.encrypted_content.startswith("gAAAAABpCCSIBxdevbk")
    assert texts(events, ReasoningDelta) == ""  # encrypted only: nothing to show
    assert texts(events, TextDelta) == message.text
    assert message.text.startswith("I\u2019m ChatGPT")  # a 3-byte UTF-8 apostrophe, split at chunk=1
    assert usage_of(response) == (9, 104, 0, None, 0)
    assert response.cost == 0.00085


WEB_SEARCH = {"type": "openrouter:web_search", "parameters": {"max_uses": 1, "search_context_size": "medium"}}
SEARCH_PROMPT = "Use web search to find Pydantic AI's GitHub repository and answer with its URL only."


async def test_chat_web_search_annotations(cassettes: Callable[..., Any]) -> None:
    """test_openrouter_web_search_annotations.yaml: server tool, url_citation annotations, search fee."""
    cassette = cassettes("test_openrouter_web_search_annotations.yaml")
    model = model_for(cassette, "deepseek/deepseek-chat", "chat", stream=False)
    request = ModelRequest(
        "deepseek/deepseek-chat", [user_message(SEARCH_PROMPT)], params={"extra_tools": [WEB_SEARCH]}
    )
    events, error = await collect_round(model, request)
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == cassette.recorded_body(0)
    response = final(events)
    message = assistant(response.items)
    assert message.text == "https://github.com/pydantic/pydantic-ai"
    annotations = message.content[0].model_extra["annotations"]  # type: ignore[index]
    assert len(annotations) == 5
    assert annotations[0]["url_citation"]["url"] == "https://github.com/pydantic/pydantic-ai"
    assert usage_of(response) == (2315, 40, 0, 0, 0)
    assert response.cost == response.billed_cost == 0.007637029  # includes the search fee


@pytest.mark.parametrize("chunk", STREAM_CHUNKS)
async def test_chat_web_search_annotations_stream(cassettes: Callable[..., Any], chunk: int | None) -> None:
    """test_openrouter_web_search_annotations_stream.yaml: annotations in deltas, finish twice."""
    cassette = cassettes("test_openrouter_web_search_annotations_stream.yaml", chunk)
    model = model_for(cassette, "deepseek/deepseek-chat", "chat", stream=True)
    request = ModelRequest(
        "deepseek/deepseek-chat", [user_message(SEARCH_PROMPT)], params={"extra_tools": [WEB_SEARCH]}
    )
    events, error = await collect_round(model, request)
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == cassette.recorded_body(0)
    response = final(events)
    message = assistant(response.items)  # exactly one message despite two finish chunks
    assert message.text == texts(events, TextDelta)
    assert "github.com/pydantic/pydantic-ai" in message.text
    assert message.content[0].model_extra["annotations"]  # type: ignore[index]
    assert usage_of(response) == (2317, 53, 0, 0, 0)
    assert response.cost == 0.0076509169000000005


@pytest.mark.parametrize("chunk", STREAM_CHUNKS)
async def test_chat_web_search_tool_usage_stream(cassettes: Callable[..., Any], chunk: int | None) -> None:
    """test_openrouter_web_search_tool_usage_stream.yaml: cache figures reported as 0 stay 0."""
    cassette = cassettes("test_openrouter_web_search_tool_usage_stream.yaml", chunk)
    model = model_for(cassette, "openai/gpt-4.1-mini", "chat", stream=True)
    request = ModelRequest(
        "openai/gpt-4.1-mini", [user_message(SEARCH_PROMPT)], params={"extra_tools": [WEB_SEARCH]}
    )
    events, error = await collect_round(model, request)
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == cassette.recorded_body(0)
    response = final(events)
    assert assistant(response.items).text == texts(events, TextDelta)
    assert usage_of(response) == (8174, 30, 0, 0, 0)
    assert response.cost == 0.0133176


def _cached_part(part: Mapping[str, Any]) -> InputText:
    return InputText(text=part["text"], cache_control=part["cache_control"])


@pytest.mark.parametrize("chunk", STREAM_CHUNKS)
async def test_chat_cache_streaming_e2e(cassettes: Callable[..., Any], chunk: int | None) -> None:
    """test_openrouter_cache_streaming_e2e.yaml: cache_control parts; usage chunk with choices: []."""
    cassette = cassettes("test_openrouter_cache_streaming_e2e.yaml", chunk)
    recorded = cassette.recorded_body(0)
    system, user = recorded["messages"]
    items = [
        MessageItem(role="system", content=[_cached_part(system["content"][0])]),
        MessageItem(role="user", content=[_cached_part(user["content"][0])]),
    ]
    model = model_for(cassette, "anthropic/claude-sonnet-4.6", "chat", stream=True)
    events, error = await collect_round(model, ModelRequest("anthropic/claude-sonnet-4.6", items))
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == recorded
    response = final(events)
    assert assistant(response.items).text == "Hello!"
    assert usage_of(response) == (254, 5, 0, 0, 0)  # zero, not absent
    assert response.cost == 0.000837


async def test_chat_cache_tool_definitions_e2e(cassettes: Callable[..., Any]) -> None:
    """test_openrouter_cache_tool_definitions_e2e.yaml: cache_control on a tool declaration."""
    cassette = cassettes("test_openrouter_cache_tool_definitions_e2e.yaml")
    recorded = cassette.recorded_body(0)
    model = model_for(cassette, "anthropic/claude-sonnet-4.6", "chat", stream=False)
    request = ModelRequest(
        "anthropic/claude-sonnet-4.6",
        [user_message(recorded["messages"][0]["content"])],
        params={"extra_tools": recorded["tools"], "tool_choice": "auto"},
    )
    events, error = await collect_round(model, request)
    assert error is None
    cassette.assert_consumed()
    assert cassette.sent[0] == recorded
    response = final(events)
    assert "get_weather" in assistant(response.items).text
    assert usage_of(response) == (566, 27, 0, 0, 0)
    assert response.cost == 0.002103


async def test_chat_cache_messages_anthropic(cassettes: Callable[..., Any]) -> None:
    """test_openrouter_cache_messages_anthropic_real_api.yaml: cache write, then read; length cut."""
    cassette = cassettes("test_openrouter_cache_messages_anthropic_real_api.yaml")
    first_body, second_body = cassette.recorded_body(0), cassette.recorded_body(1)
    params = {"max_output_tokens": 100, "provider": first_body["provider"]}
    system = first_body["messages"][0]["content"]
    long_prompt = first_body["messages"][1]["content"][0]
    model = model_for(cassette, "anthropic/claude-sonnet-4.6", "chat", stream=False)
    first_events, _ = await collect_round(
        model,
        ModelRequest(
            "anthropic/claude-sonnet-4.6",
            [MessageItem(role="user", content=[_cached_part(long_prompt)])],
            instructions=system,
            params=params,
        ),
    )
    first = final(first_events)
    follow_up = second_body["messages"][3]["content"][0]
    history = [
        user_message(second_body["messages"][1]["content"]),
        MessageItem(role="assistant", content=second_body["messages"][2]["content"]),
        MessageItem(role="user", content=[_cached_part(follow_up)]),
    ]
    second_events, _ = await collect_round(
        model, ModelRequest("anthropic/claude-sonnet-4.6", history, instructions=system, params=params)
    )
    cassette.assert_consumed()
    assert cassette.sent == [first_body, second_body]
    second = final(second_events)
    assert usage_of(first) == (3214, 100, 0, 3211, 0)
    assert usage_of(second) == (3329, 53, 3211, 115, 0)
    assert (first.cost, second.cost) == (0.01355025, 0.00219855)
    assert assistant(first.items).status == "incomplete"  # finish_reason: length
    assert assistant(second.items).status == "completed"


def test_every_fixture_is_replayed() -> None:
    """Each recording in fixtures/ is named by a test in this module."""
    source = Path(__file__).read_text(encoding="utf-8")
    names = sorted(p.name for p in (Path(__file__).parent / "fixtures").glob("*.yaml"))
    assert len(names) == 15
    missing = [n for n in names if f'"{n}"' not in source]
    assert not missing, f"fixtures without a replay test: {missing}"


def test_server_tool_items_round_trip_unchanged() -> None:
    """openrouter:* items and unmodelled provider items go back exactly as they came."""
    server = {"type": "openrouter:web_search", "id": "ws_1", "status": "completed", "query": "pydantic ai"}
    unmodelled = {"type": "web_search_call", "id": "wsc_1", "status": "completed", "action": {"query": "x"}}
    items = output_items([server, unmodelled], "", ToolNames())
    assert isinstance(items[0], ExtensionItem)
    assert items[0].type == "openrouter:web_search"
    assert isinstance(items[1], ExtensionItem)
    assert items[1].type == "openrouter:web_search_call"
    _, wire_input = input_items(items, ToolNames())
    assert wire_input == [server, unmodelled]
