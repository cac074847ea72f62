"""Retry policy: which failures are re-sent, how long to wait, and never after output started.

Re-sent: 408, 429, 500, 502, 503, 504, 529, a 402 with `Retry-After`, connection failures. Not re-sent: 400,
401, 403, a plain 402, or anything once the stream began. `Retry-After` (seconds or HTTP date)
is honoured up to `max_retry_after`; otherwise the wait is capped exponential backoff with
full jitter. Error codes follow the adapter's taxonomy (`noetic.errors`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from noetic.errors import NoeticError
from noetic.items import user_message
from noetic.model import ModelEvent, ModelRequest, ModelResponse, TextDelta
from noetic.testing.model_conformance import ManualAbort, RecordingBilling
from noetic.usage import RoundUsage
from noetic_adapters_openrouter import OpenRouterProvider, RetryPolicy
from noetic_adapters_openrouter.retry import retry_after

TEST_KEY = "sk-or-v1-placeholder-not-a-real-key-0000"
MODEL = "test/retry-model"


class RecordingPolicy(RetryPolicy):
    """Records the delay each retry asked for, then waits 0 s instead."""

    asked: list[float | None]

    def delay(
        self, attempt: int, retry_after: float | None, *, rand: Callable[[], float] = random.random
    ) -> float | None:
        wanted = RetryPolicy.delay(self, attempt, retry_after, rand=rand)
        self.asked.append(wanted)
        return None if wanted is None else 0.0


def recording_policy(**kwargs: Any) -> RecordingPolicy:
    policy = RecordingPolicy(**kwargs)
    RecordingPolicy.asked = []
    return policy


def success(wire: Any) -> httpx.Response:
    usage = wire.responses_usage(RoundUsage(input_tokens=2, output_tokens=1), 0.00001)
    body = wire.sse(wire.responses_text("ok", usage, "gen-ok"))
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)


async def call(
    handler: Callable[[httpx.Request], httpx.Response], policy: RetryPolicy
) -> tuple[list[ModelEvent], NoeticError | None]:
    events: list[ModelEvent] = []
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = OpenRouterProvider(api_key=TEST_KEY, http_client=client, retry=policy)
        try:
            async for event in provider.model(MODEL).stream(
                ModelRequest(MODEL, [user_message("hi")], billing=RecordingBilling()), cancel=ManualAbort()
            ):
                events.append(event)
        except NoeticError as exc:
            return events, exc
    return events, None


def scripted(
    *answers: httpx.Response,
) -> tuple[Callable[[httpx.Request], httpx.Response], list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[min(len(seen), len(answers)) - 1]

    return handler, seen


def error_body(status: int, message: str, **metadata: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"code": status, "message": message}
    if metadata:
        error["metadata"] = metadata
    return {"error": error}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (408, {}),
        (429, {}),
        (500, {}),
        (502, {}),
        (503, {}),
        (504, {}),
        (529, {}),
        (402, {"Retry-After": "1"}),
        (429, {"Retry-After": "2"}),
    ],
)
async def test_transient_rejections_are_retried(wire: Any, status: int, headers: dict[str, str]) -> None:
    handler, seen = scripted(
        httpx.Response(status, headers=headers, json=error_body(status, "busy")), success(wire)
    )
    events, error = await call(handler, recording_policy())
    assert error is None
    assert len(seen) == 2
    assert isinstance(events[-1], ModelResponse)
    if "Retry-After" in headers:
        assert RecordingPolicy.asked == [float(headers["Retry-After"])]  # honoured exactly


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "metadata", "code"),
    [
        (400, {}, "model_error"),
        (401, {}, "model_error"),
        (402, {"limit_source": "openrouter_credits"}, "model_error"),
        (403, {"limit_source": "openrouter_key_limit"}, "model_error"),
        (403, {"reasons": ["violence"], "flagged_input": "...", "provider_name": "OpenAI"}, "model_refused"),
        (404, {}, "model_error"),
    ],
)
async def test_final_rejections_are_not_retried(
    wire: Any, status: int, metadata: dict[str, Any], code: str
) -> None:
    handler, seen = scripted(httpx.Response(status, json=error_body(status, "no", **metadata)), success(wire))
    events, error = await call(handler, recording_policy())
    assert len(seen) == 1
    assert events == []
    assert error is not None
    assert error.code == code
    assert error.status == status
    assert error.in_stream is False
    assert error.message.endswith(".")  # ends with guidance on what to change


@pytest.mark.anyio
async def test_retries_stop_after_max_attempts_with_the_last_error(wire: Any) -> None:
    handler, seen = scripted(httpx.Response(503, json=error_body(503, "no provider")))
    _, error = await call(handler, recording_policy(max_attempts=3))
    assert len(seen) == 3
    assert error is not None
    assert error.code == "model_error"
    assert error.status == 503
    assert error.retryable is True


@pytest.mark.anyio
async def test_a_retry_after_beyond_the_cap_is_raised_not_waited(wire: Any) -> None:
    handler, seen = scripted(
        httpx.Response(429, headers={"Retry-After": "3600"}, json=error_body(429, "later"))
    )
    _, error = await call(handler, recording_policy(max_retry_after=60.0))
    assert len(seen) == 1
    assert error is not None
    assert error.code == "model_rate_limit"
    assert error.retry_after == 3600.0


@pytest.mark.anyio
async def test_402_with_retry_after_is_a_rate_limit_when_retries_run_out(wire: Any) -> None:
    body = error_body(402, "in-flight budget exceeded", limit_source="openrouter_in_flight_budget")
    handler, seen = scripted(httpx.Response(402, headers={"Retry-After": "0"}, json=body))
    _, error = await call(handler, recording_policy(max_attempts=2))
    assert len(seen) == 2
    assert error is not None
    assert error.code == "model_rate_limit"
    assert error.limit_source == "openrouter_in_flight_budget"


@pytest.mark.anyio
async def test_connect_errors_are_retried(wire: Any) -> None:
    attempts = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise httpx.ConnectError("connection refused", request=request)
        return success(wire)

    events, error = await call(handler, recording_policy())
    assert error is None
    assert attempts == 2
    assert isinstance(events[-1], ModelResponse)


@pytest.mark.anyio
async def test_nothing_is_retried_once_output_started(wire: Any) -> None:
    """A 429 that arrives inside the stream (after a delta) fails the call; no second request."""
    events_on_wire = [
        *wire.responses_head("gen-x"),
        {"type": "response.output_text.delta", "delta": "Hi"},
        {
            "type": "response.failed",
            "response": {
                "id": "gen-x",
                "status": "failed",
                "error": {"code": "rate_limit_exceeded", "message": "slow down"},
            },
        },
    ]
    handler, seen = scripted(
        httpx.Response(200, headers={"content-type": "text/event-stream"}, content=wire.sse(events_on_wire))
    )
    events, error = await call(handler, recording_policy())
    assert [r.method for r in seen if r.url.path.endswith("/responses")] == ["POST"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hi"]
    assert error is not None
    assert error.code == "model_rate_limit"
    assert error.in_stream is True


def test_backoff_is_capped_full_jitter() -> None:
    policy = RetryPolicy(max_attempts=10, base_delay=0.5, max_delay=4.0)
    assert policy.delay(1, None, rand=lambda: 1.0) == 0.5
    assert policy.delay(3, None, rand=lambda: 1.0) == 2.0
    assert policy.delay(9, None, rand=lambda: 1.0) == 4.0  # capped
    assert policy.delay(9, None, rand=lambda: 0.25) == 1.0  # jittered below the cap
    assert policy.delay(10, None) is None  # attempts exhausted
    assert policy.delay(1, 7.5) == 7.5  # Retry-After wins over backoff


def test_retry_after_parses_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after(httpx.Headers({"Retry-After": "12"})) == 12.0
    assert retry_after(httpx.Headers({"Retry-After": "Thu, 01 Jan 2026 12:00:30 GMT"}), now=now) == 30.0
    assert retry_after(httpx.Headers({"Retry-After": "Thu, 01 Jan 2026 11:00:00 GMT"}), now=now) == 0.0
    assert retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert retry_after(httpx.Headers({})) is None


def test_error_bodies_keep_the_provider_message() -> None:
    from noetic_adapters_openrouter.errors import error_from_status

    raw = json.dumps(
        error_body(429, "Provider returned error", provider_name="Google", raw="upstream busy")
    ).encode()
    error = error_from_status(429, raw, model_id="m", secret=None)
    assert error.code == "model_rate_limit"
    assert error.provider_name == "Google"
    assert "Provider returned error (upstream busy)" in error.message
    plain = error_from_status(502, b"<html>Bad gateway</html>", model_id="m", secret=None)
    assert plain.code == "model_error"
    assert "Bad gateway" in plain.message
