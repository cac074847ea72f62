"""The provider, the registry entry and the lifecycle.

`model="openrouter:<id>"` resolves through the plugin registry (and a bare id when this is the
only installed adapter); a missing key is `MISSING_API_KEY` at first use, never at import or
construction; the entry module stays free of httpx; the harness closes the provider it built;
reprs never show the key; attribution headers and the Bearer header go with every request.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import noetic as nt
import noetic_adapters_openrouter.plugin as openrouter_plugin
import pytest
from noetic.errors import NoeticConfigError
from noetic.items import user_message
from noetic.model import ModelRequest
from noetic.plugins import make_plugin_manager
from noetic.testing.model_conformance import ManualAbort
from noetic.usage import RoundUsage
from noetic_adapters_openrouter import OpenRouterModel, OpenRouterProvider
from noetic_adapters_openrouter.provider import DEFAULT_BASE_URL

TEST_KEY = "sk-or-v1-placeholder-not-a-real-key-0000"


def only_openrouter() -> Any:
    return make_plugin_manager(plugins=[openrouter_plugin], load_entry_points=False)


def test_entry_module_does_not_import_httpx() -> None:
    code = "import sys, noetic_adapters_openrouter.plugin; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.anyio
async def test_prefixed_model_id_resolves_and_the_harness_closes_what_it_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    async with nt.AgentHarness("t", plugins=only_openrouter()) as harness:
        model = harness.resolve_model("openrouter:anthropic/claude-sonnet-4")
        assert isinstance(model, OpenRouterModel)
        assert model.model_id == "anthropic/claude-sonnet-4"
        assert model.provider.base_url == DEFAULT_BASE_URL
        client = model.provider.client()
    assert client.is_closed


def test_a_bare_model_id_goes_to_the_only_installed_adapter() -> None:
    harness = nt.AgentHarness("t", plugins=only_openrouter())
    model = harness.resolve_model("google/gemini-2.0-flash-exp:free")
    assert isinstance(model, OpenRouterModel)
    assert model.model_id == "google/gemini-2.0-flash-exp:free"


def test_an_empty_model_id_or_unknown_api_is_a_config_error() -> None:
    provider = OpenRouterProvider(api_key=TEST_KEY)
    with pytest.raises(NoeticConfigError) as err:
        provider.model("  ")
    assert err.value.code == "MISSING_MODEL"
    with pytest.raises(NoeticConfigError) as err:
        provider.model("a/b", api="completions")  # type: ignore[arg-type]
    assert err.value.code == "UNKNOWN_MODEL_ADAPTER"


@pytest.mark.anyio
async def test_missing_key_fails_at_first_use_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    provider = OpenRouterProvider()  # constructing is fine
    model = provider.model("anthropic/claude-sonnet-4")
    with pytest.raises(NoeticConfigError) as err:
        async for _ in model.stream(ModelRequest(model.model_id, [user_message("hi")]), cancel=ManualAbort()):
            pass
    assert err.value.code == "MISSING_API_KEY"
    assert "OPENROUTER_API_KEY" in err.value.hint


@pytest.mark.anyio
async def test_a_call_through_the_harness_with_a_model_string(
    monkeypatch: pytest.MonkeyPatch, loopback: Any, wire: Any
) -> None:
    """End to end: model='openrouter:…', key and base URL from the environment."""
    gen_id = "gen-e2e-1"

    async def responses(request: Any, stream: Any) -> None:
        assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
        usage = wire.responses_usage(RoundUsage(input_tokens=9, output_tokens=3, cached_tokens=0), 0.00005)
        await loopback.start_sse(stream, gen_id)
        await stream.send(wire.sse(wire.responses_text("Hello, Noetic!", usage, gen_id)))

    loopback.routes["/api/v1/responses"] = responses
    monkeypatch.setenv("OPENROUTER_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENROUTER_BASE_URL", loopback.url)
    agent = nt.call_model("answer", instructions="Be brief.")
    async with nt.AgentHarness(
        "e2e", agent_graph=agent, model="openrouter:test/e2e-model", plugins=only_openrouter()
    ) as harness:
        response = await harness.run("Say hello.")
    assert response.text == "Hello, Noetic!"
    assert (response.cost, response.billed_cost, response.held_cost) == (0.00005, 0.00005, 0.0)
    assert response.usage.input_tokens == 9
    assert response.usage.cached_tokens == 0
    (sent,) = loopback.hits("/api/v1/responses")
    body = sent.json()
    assert body["model"] == "test/e2e-model"
    assert body["instructions"] == "Be brief."
    assert body["input"] == [{"role": "user", "content": "Say hello."}]
    assert body["stream"] is True
    assert sent.headers["x-title"] == "Noetic"
    assert sent.headers["user-agent"].startswith("noetic-adapters-openrouter")


@pytest.mark.anyio
async def test_attribution_headers_and_a_user_client_left_open(wire: Any) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = wire.sse(wire.responses_text("ok", None, "gen-h"))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with OpenRouterProvider(
        api_key=TEST_KEY, http_client=client, app_url="https://example.org/app", app_title="My App"
    ) as provider:
        async for _ in provider.model("m/x").stream(
            ModelRequest("m/x", [user_message("hi")]), cancel=ManualAbort()
        ):
            pass
    assert not client.is_closed  # the provider never closes a client it was given
    await client.aclose()
    (request,) = seen
    assert request.headers["http-referer"] == "https://example.org/app"
    assert request.headers["x-title"] == "My App"
    assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert json.loads(request.content)["model"] == "m/x"


def test_reprs_never_show_the_key() -> None:
    provider = OpenRouterProvider(api_key=TEST_KEY)
    texts = [repr(provider), repr(provider.model("a/b")), repr(provider.auth()), str(provider.secret)]
    assert all(TEST_KEY not in t for t in texts)
    assert "**********" in repr(provider)
