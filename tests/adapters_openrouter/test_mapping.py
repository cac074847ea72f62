"""Wire mapping units: request bodies, usage (TU-2), tool names, errors, held-cost arithmetic."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from noetic.errors import NoeticError
from noetic.items import (
    ExtensionItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputText,
    Item,
    MessageItem,
    OtherPart,
    ReasoningItem,
    assistant_message,
    developer_message,
    system_message,
    user_message,
)
from noetic.model import ModelRequest, ToolDefinition
from noetic.testing.model_conformance import RecordedHold
from noetic_adapters_openrouter.billing import (
    BillingPolicy,
    ModelPricing,
    PricingCatalog,
    ceiling,
    reconcile,
)
from noetic_adapters_openrouter.chat import ChatEndpoint
from noetic_adapters_openrouter.credentials import BearerAuth, redact
from noetic_adapters_openrouter.errors import error_from_payload
from noetic_adapters_openrouter.params import split_params
from noetic_adapters_openrouter.responses import ResponsesEndpoint
from noetic_adapters_openrouter.tool_names import ToolNames
from noetic_adapters_openrouter.usage import parse_usage
from pydantic import SecretStr

NOTES = ToolDefinition(
    "notes/search", "Search notes.", {"type": "object", "properties": {"q": {"type": "string"}}}
)


def responses_body(request: ModelRequest) -> dict[str, Any]:
    names = ToolNames(t.name for t in request.tools)
    return ResponsesEndpoint().body(request, names, split_params(request.params), stream=True)


def chat_body(request: ModelRequest) -> dict[str, Any]:
    names = ToolNames(t.name for t in request.tools)
    return ChatEndpoint().body(request, names, split_params(request.params), stream=True)


# --- request bodies ---------------------------------------------------------------------------


def test_responses_body_maps_every_request_field() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    request = ModelRequest(
        "a/b",
        [system_message("Sys one."), user_message("Hi"), developer_message("Dev.")],
        instructions="Be brief.",
        tools=[NOTES],
        output_schema=schema,
        params={
            "max_tokens": 500,
            "temperature": 0.2,
            "reasoning": {"effort": "low"},
            "provider": {"order": ["anthropic"]},
            "tool_choice": "notes/search",
            "extra_tools": [{"type": "openrouter:web_search"}],
        },
        cache_control=True,
    )
    body = responses_body(request)
    assert body["instructions"] == "Be brief.\n\nSys one."
    assert body["input"] == [{"role": "user", "content": "Hi"}, {"role": "developer", "content": "Dev."}]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "notes_search",
            "description": "Search notes.",
            "parameters": dict(NOTES.parameters),
        },
        {"type": "openrouter:web_search"},
    ]
    assert body["tool_choice"] == {"type": "function", "name": "notes_search"}
    assert body["text"] == {"format": {"type": "json_schema", "name": "output", "schema": schema}}
    assert body["max_output_tokens"] == 500
    assert body["cache_control"] == {"type": "ephemeral"}
    assert (body["temperature"], body["reasoning"], body["provider"]) == (
        0.2,
        {"effort": "low"},
        {"order": ["anthropic"]},
    )
    assert body["stream"] is True


def test_chat_body_maps_every_request_field() -> None:
    request = ModelRequest(
        "a/b",
        [
            user_message("Find my notes"),
            FunctionCallItem(call_id="c1", name="notes/search", arguments='{"q": "x"}'),
            FunctionCallOutputItem(call_id="c1", output='"found"'),
            assistant_message("Here they are."),
        ],
        instructions="Be brief.",
        tools=[NOTES],
        output_schema={"type": "object"},
        params={"max_output_tokens": 64, "tool_choice": "notes/search"},
        cache_control=True,
    )
    body = chat_body(request)
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Find my notes"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "notes_search", "arguments": '{"q": "x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '"found"'},
        {"role": "assistant", "content": "Here they are."},
    ]
    assert body["tools"][0]["function"]["name"] == "notes_search"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "notes_search"}}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": {"type": "object"}},
    }
    assert body["max_completion_tokens"] == 64
    assert body["cache_control"] == {"type": "ephemeral"}
    assert body["stream_options"] == {"include_usage": True}


def test_responses_input_sends_parts_only_when_needed_and_skips_application_items() -> None:
    image = OtherPart.model_validate({"type": "input_image", "image_url": "data:image/png;base64,AAAA"})
    items: list[Item] = [
        MessageItem(role="user", content=[InputText(text="Look:"), image]),
        MessageItem(role="user", content=[InputText(text="cached", cache_control={"type": "ephemeral"})]),
        MessageItem(
            role="assistant",
            content=[{"type": "output_text", "text": "ok", "annotations": [], "logprobs": []}],
        ),
        ExtensionItem(type="myapp:progress", data={"done": 1}),  # a custom item: never sent
        ReasoningItem(
            content=[], reasoning_details=[{"type": "reasoning.text"}]
        ),  # chat-origin: not sent here
    ]
    body = responses_body(ModelRequest("a/b", items))
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look:"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            ],
        },
        {
            "role": "user",
            "content": [{"cache_control": {"type": "ephemeral"}, "type": "input_text", "text": "cached"}],
        },
        {"role": "assistant", "content": "ok"},  # output-only annotations/logprobs dropped
    ]


def test_function_calls_come_back_under_the_declared_name() -> None:
    from noetic_adapters_openrouter.responses import output_items

    names = ToolNames(["notes/search", "notes_search", "x" * 70])
    assert names.wire("notes_search") == "notes_search"  # valid names keep their name
    assert names.wire("notes/search") == "notes_search_2"
    assert len(names.wire("x" * 70)) == 64
    raw = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "notes_search_2", "arguments": "{}"}
    (call,) = output_items([raw], "", names)
    assert isinstance(call, FunctionCallItem)
    assert call.name == "notes/search"


def test_unknown_params_go_through_and_bad_mapped_params_are_config_errors() -> None:
    assert split_params({"seed": 7, "models": ["a", "b"]}).extra == {"seed": 7, "models": ["a", "b"]}
    with pytest.raises(NoeticError) as err:
        split_params({"max_output_tokens": 0})
    assert err.value.code == "INVALID_STEP"
    with pytest.raises(NoeticError):
        split_params({"extra_tools": "openrouter:web_search"})


# --- usage (TU-2) -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"input_tokens": 5, "output_tokens": 2}, (5, 2, None, None, None, None)),
        (
            {"input_tokens": 5, "output_tokens": 2, "input_tokens_details": {"cached_tokens": 0}, "cost": 0},
            (5, 2, 0, None, None, 0.0),
        ),
        (
            {
                "prompt_tokens": 7,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 0},
            },
            (7, 1, 3, 0, None, None),
        ),
        (
            {"prompt_tokens": 7, "completion_tokens": 1, "prompt_tokens_details": None, "cost": None},
            (7, 1, None, None, None, None),
        ),
        (
            {
                "input_tokens": 1,
                "output_tokens": 1,
                "output_tokens_details": {"reasoning_tokens": 0},
                "cost": 0.5,
            },
            (1, 1, None, None, 0, 0.5),
        ),
    ],
)
def test_usage_keeps_absent_apart_from_zero(raw: dict[str, Any], expected: tuple[Any, ...]) -> None:
    usage = parse_usage(raw)
    assert usage is not None
    got = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
        usage.cost,
    )
    assert got == expected


def test_byok_billed_cost_is_openrouters_fee_only() -> None:
    usage = parse_usage(
        {
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "cost": 0,
            "is_byok": True,
            "cost_details": {"upstream_inference_cost": 0.0003},
        }
    )
    assert usage is not None
    assert (usage.cost, usage.billed_cost, usage.is_byok, usage.upstream_cost) == (0.0, 0.0, True, 0.0003)
    assert parse_usage(None) is None


# --- errors and secrets -----------------------------------------------------------------------


def test_provider_text_is_scrubbed_of_keys() -> None:
    secret = SecretStr("my-very-own-secret-key-123")
    payload = {
        "error": {"code": 401, "message": "bad key my-very-own-secret-key-123 and sk-or-v1-abcdef0123456789"}
    }
    error = error_from_payload(payload, model_id="m", secret=secret, status=401)
    assert "my-very-own-secret-key-123" not in str(error)
    assert "sk-or-v1-abcdef0123456789" not in str(error)
    assert "[redacted]" in error.provider_message
    assert redact("Authorization: Bearer abc.def-ghi_jkl") == "Authorization: [redacted]"


def test_moderation_is_a_refusal() -> None:
    payload = {
        "error": {
            "code": 403,
            "message": "flagged",
            "metadata": {"reasons": ["harassment"], "flagged_input": "…"},
        }
    }
    assert error_from_payload(payload, model_id="m", secret=None, status=403).code == "model_refused"
    in_band = {"type": "error", "code": "content_filter", "message": "blocked"}
    assert error_from_payload(in_band, model_id="m", secret=None).code == "model_refused"


def test_an_untyped_error_event_in_a_responses_stream_fails_the_call() -> None:
    from noetic_adapters_openrouter.endpoint import ProviderFailure
    from noetic_adapters_openrouter.responses import ResponsesStream

    stream = ResponsesStream(ToolNames())
    with pytest.raises(ProviderFailure):
        stream.feed({"error": {"code": 502, "message": "upstream died"}})


def test_bearer_auth_sets_the_header_per_request() -> None:
    auth = BearerAuth(SecretStr("k-123"))
    request = httpx.Request("POST", "https://x.test/")
    flow = auth.sync_auth_flow(request)
    assert next(flow).headers["authorization"] == "Bearer k-123"
    assert "k-123" not in repr(auth)


# --- held cost --------------------------------------------------------------------------------


def test_ceiling_arithmetic() -> None:
    pricing = ModelPricing(
        prompt=0.000003,
        completion=0.000015,
        request=0.001,
        web_search=0.004,
        max_completion_tokens=8000,
        context_length=200000,
    )
    assert ceiling(pricing, 1000, 500) == pytest.approx(1000 * 0.000003 + 500 * 0.000015 + 0.001)
    assert ceiling(pricing, 1000, None) == pytest.approx(1000 * 0.000003 + 8000 * 0.000015 + 0.001)
    search = [{"type": "openrouter:web_search", "parameters": {"max_uses": 3}}]
    assert ceiling(pricing, 0, 1, search) == pytest.approx(0.000015 + 0.001 + 3 * 0.004)
    no_limit = ModelPricing(prompt=0.000001, completion=0.000002, context_length=1000)
    assert ceiling(no_limit, 400, None) == pytest.approx(400 * 0.000001 + 600 * 0.000002)


def test_pricing_rejects_unknown_prices() -> None:
    assert ModelPricing.from_wire({"pricing": {"prompt": "-1", "completion": "-1"}}) is None
    assert ModelPricing.from_wire({"pricing": {"prompt": "0.1"}}) is None
    free = ModelPricing.from_wire({"pricing": {"prompt": "0", "completion": "0"}})
    assert free is not None
    assert free.is_free


@pytest.mark.anyio
async def test_pricing_is_fetched_once_and_variants_fall_back(wire: Any) -> None:
    fetches = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal fetches
        fetches += 1
        return httpx.Response(200, json=wire.models("a/b"))

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        catalog = PricingCatalog()
        auth = BearerAuth(SecretStr("k"))
        first = await catalog.get(client, "https://x.test/models", auth, "a/b")
        variant = await catalog.get(client, "https://x.test/models", auth, "a/b:nitro")
        assert await catalog.get(client, "https://x.test/models", auth, "unknown/model") is None
    assert first is not None
    assert first == variant
    assert first.prompt == 0.000003
    assert fetches == 1


@pytest.mark.anyio
async def test_reconcile_polls_through_404_then_settles(wire: Any) -> None:
    answers = iter([404, 404, 503, 200])
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.params["id"])
        status = next(answers)
        if status == 200:
            return httpx.Response(200, json=wire.generation("gen-1", 0.0123))
        return httpx.Response(status, json={"error": {"code": status, "message": "not yet"}})

    hold = RecordedHold(0.5)
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        policy = BillingPolicy(first_poll_delay=0.0, max_poll_delay=0.0)
        await reconcile(
            client, "https://x.test/generation", BearerAuth(SecretStr("k")), "gen-1", hold, policy
        )
    assert seen == ["gen-1"] * 4
    assert hold.settled == (0.0123, 0.0123)


@pytest.mark.anyio
async def test_reconcile_gives_up_into_a_held_state(wire: Any) -> None:
    def forbidden(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"error": {"code": 403, "message": "no access"}})

    hold = RecordedHold(0.5)
    async with httpx.AsyncClient(transport=httpx.MockTransport(forbidden)) as client:
        policy = BillingPolicy(first_poll_delay=0.0, max_poll_delay=0.0)
        await reconcile(
            client, "https://x.test/generation", BearerAuth(SecretStr("k")), "gen-1", hold, policy
        )
    assert not hold.closed  # the ceiling stays held: an honest bound of unsettled spend


@pytest.mark.anyio
async def test_a_free_model_cut_off_holds_nothing(wire: Any) -> None:
    from noetic.items import user_message as um
    from noetic.testing.model_conformance import ManualAbort, RecordingBilling
    from noetic_adapters_openrouter import OpenRouterProvider

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json=wire.models("a/b"))
        body = wire.sse(wire.responses_head("gen-free"), done=False)  # cut: no completion, no [DONE]
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    billing = RecordingBilling()
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        model = OpenRouterProvider(api_key="k", http_client=client).model("free/model:free")
        with pytest.raises(NoeticError) as err:
            async for _ in model.stream(
                ModelRequest("free/model:free", [um("hi")], billing=billing), cancel=ManualAbort()
            ):
                pass
    assert err.value.code == "model_stream_error"
    assert billing.holds == []
    assert json.dumps(err.value.details, default=str)
