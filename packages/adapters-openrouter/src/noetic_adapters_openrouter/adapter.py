"""`OpenRouterModel`: the model adapter the runtime calls once per round.

One round: build the body (the endpoint's job), send it — re-sending only while nothing has
come back (see `retry`) — then read the answer: an event stream is decoded by `sse`, fed to
the endpoint's accumulator, and its deltas are yielded as they arrive; a JSON body is parsed
whole. The round ends with exactly one `ModelResponse` carrying items, usage, `cost`,
`billed_cost` (see `usage` for the rule) and the generation id.

Every call runs within the provider's `deadlines` (see `deadlines`): an idle timeout between
events and a total deadline. A payload of an impossible shape (`reasoning_details: 5`) is a
`model_stream_error` naming the field, never a raw `TypeError`; everything taken from the wire
into an id or an error detail is scrubbed of the key (`errors.wire_text`).

Whatever ends the round — the final response, an error, the caller's abort (the runtime
cancels the consuming scope; `cancel.aborted` is also checked between events for callers
without one) — the `finally` block closes the HTTP response under a shield, so the connection
is released at once. A call that got a `200` but no usage (cut off, broken, or a provider
that sent none) is then held and reconciled through `billing`; a failure that arrived with
its usage is charged in-band.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio
import httpx
from noetic.errors import NoeticConfigError, NoeticError, cancelled
from noetic.model import AbortSignal, ModelEvent, ModelRequest, ModelResponse, ReasoningDelta, TextDelta
from noetic.usage import RoundUsage
from pydantic import SecretStr

from noetic_adapters_openrouter.billing import ceiling, prompt_estimate
from noetic_adapters_openrouter.chat import ChatEndpoint
from noetic_adapters_openrouter.credentials import log, redact
from noetic_adapters_openrouter.deadlines import CallClock, OutOfTime
from noetic_adapters_openrouter.endpoint import (
    Endpoint,
    IncompleteStream,
    ProviderFailure,
    RoundResult,
    RoundStream,
)
from noetic_adapters_openrouter.errors import (
    error_from_payload,
    error_from_status,
    stream_error,
    transport_error,
    wire_text,
)
from noetic_adapters_openrouter.params import CallParams, split_params
from noetic_adapters_openrouter.responses import ResponsesEndpoint
from noetic_adapters_openrouter.retry import is_retryable_status, is_retryable_transport, retry_after
from noetic_adapters_openrouter.sse import SseError, json_events
from noetic_adapters_openrouter.tool_names import ToolNames
from noetic_adapters_openrouter.usage import ProviderUsage
from noetic_adapters_openrouter.wire import MalformedPayload

if TYPE_CHECKING:
    from noetic_adapters_openrouter.provider import OpenRouterProvider

__all__ = ["OpenRouterModel"]

_ENDPOINTS: Mapping[str, Endpoint] = {"responses": ResponsesEndpoint(), "chat": ChatEndpoint()}
_ERROR_BODY_LIMIT = 64 * 1024


class _Call:
    """What one round learned about its own billing."""

    __slots__ = ("generation_id", "settled")

    def __init__(self, generation_id: str | None):
        self.generation_id = generation_id
        self.settled = False


class OpenRouterModel:
    """A model on OpenRouter (see the module docstring). Build it with `OpenRouterProvider.model`."""

    #: The GenAI provider name traces carry (`gen_ai.provider.name`).
    provider_name = "openrouter"

    #: `request.output_schema` is sent as a strict JSON Schema response format, so a `decide`
    #: step reads its answers as native structured output.
    structured_output = True

    def __init__(
        self,
        provider: OpenRouterProvider,
        model_id: str,
        *,
        api: Literal["responses", "chat"] = "responses",
        stream: bool = True,
        params: Mapping[str, Any] | None = None,
        owns_provider: bool = False,
    ):
        if not isinstance(model_id, str) or not model_id.strip():
            raise NoeticConfigError(
                "MISSING_MODEL",
                f"an OpenRouter model needs a model id, got {model_id!r}",
                hint="Name the model, e.g. 'openrouter:anthropic/claude-sonnet-4'.",
            )
        endpoint = _ENDPOINTS.get(api)
        if endpoint is None:
            raise NoeticConfigError(
                "UNKNOWN_MODEL_ADAPTER",
                f"OpenRouter has no API named {api!r}",
                hint="Pass api='responses' (the default) or api='chat'.",
            )
        self.model_id = model_id
        self.api = api
        self.provider = provider
        self._endpoint = endpoint
        self._stream = stream
        self._params = dict(params or {})
        self._owns_provider = owns_provider

    async def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        """Stream one round: deltas, then exactly one `ModelResponse`."""
        if cancel.aborted:
            raise cancelled(cancel.abort_reason)
        clock = self.provider.deadlines.start()
        params = split_params({**self._params, **request.params})
        names = ToolNames(t.name for t in request.tools)
        body = self._endpoint.body(request, names, params, stream=self._stream)
        response = await self._open(body, cancel, clock)
        secret = self.provider.secret
        call = _Call(wire_text(response.headers.get("x-generation-id"), secret))
        try:
            try:
                if "text/event-stream" in response.headers.get("content-type", ""):
                    round_stream = self._endpoint.round_stream(names)
                    events = json_events(response.aiter_bytes(), limits=self.provider.sse_limits)
                    async with aclosing(_deltas(events, round_stream, call, clock, secret)) as batches:
                        async for deltas in batches:
                            for delta in deltas:
                                yield delta
                            if cancel.aborted:
                                raise cancelled(cancel.abort_reason)
                    result = round_stream.finish()
                else:
                    with anyio.move_on_after(clock.remaining()) as waited:
                        payload = await self._json(response)
                    if waited.cancelled_caught:
                        raise clock.expired()
                    result = self._endpoint.parse(payload, names)
            except ProviderFailure as failure:
                call.settled = self._charge(request, failure.usage)
                raise error_from_payload(
                    failure.payload,
                    model_id=self.model_id,
                    secret=secret,
                    generation_id=call.generation_id,
                    usage=failure.usage,
                ) from None
            except (SseError, IncompleteStream, OutOfTime) as exc:
                raise stream_error(
                    redact(str(exc), secret),
                    model_id=self.model_id,
                    generation_id=call.generation_id,
                    timeout=isinstance(exc, OutOfTime),
                ) from None
            except _UNREADABLE as exc:
                raise stream_error(
                    _unreadable(exc, secret), model_id=self.model_id, generation_id=call.generation_id
                ) from None
            except httpx.HTTPError as exc:
                raise transport_error(
                    exc, model_id=self.model_id, started=True, generation_id=call.generation_id
                ) from None
            call.generation_id = call.generation_id or wire_text(result.generation_id, secret)
            call.settled = self._settles(result.usage)
            yield self._response(request, result, call.generation_id)
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
                if not call.settled:
                    await self._hold(request, params, call.generation_id)

    async def aclose(self) -> None:
        """Close the provider when this adapter owns it (adapters built from a model id)."""
        if self._owns_provider:
            await self.provider.aclose()

    def __repr__(self) -> str:
        return f"OpenRouterModel({self.model_id!r}, api={self.api!r})"

    # --- sending ----------------------------------------------------------------------------

    async def _open(self, body: dict[str, Any], cancel: AbortSignal, clock: CallClock) -> httpx.Response:
        """POST `body` and return the successful streaming response, retrying before output,
        all within the call's total deadline."""
        with anyio.move_on_after(clock.remaining()):
            return await self._send(body, cancel)
        raise NoeticError(
            "model_error",
            f"no answer from OpenRouter for model {self.model_id!r}: {clock.expired()}. "
            "Raise OpenRouterProvider(deadlines=Deadlines(total=...)) or retry later.",
            retryable=True,
            in_stream=False,
            model_id=self.model_id,
        )

    async def _send(self, body: dict[str, Any], cancel: AbortSignal) -> httpx.Response:
        provider = self.provider
        auth = provider.auth()
        client = provider.client()
        url = provider.url(self._endpoint.path)
        attempt = 0
        while True:
            attempt += 1
            if cancel.aborted:
                raise cancelled(cancel.abort_reason)
            request = client.build_request("POST", url, json=body, headers=provider.headers)
            try:
                response = await client.send(request, stream=True, auth=auth)
            except httpx.HTTPError as exc:
                delay = provider.retry.delay(attempt, None) if is_retryable_transport(exc) else None
                if delay is None:
                    raise transport_error(exc, model_id=self.model_id, started=False) from None
                log.info(
                    "model %s: %s before any answer; retrying in %.2f s",
                    self.model_id,
                    type(exc).__name__,
                    delay,
                )
                await anyio.sleep(delay)
                continue
            if response.is_success:
                return response
            error = await self._rejection(response)
            wait = error.details["retry_after"]
            status = response.status_code
            delay = provider.retry.delay(attempt, wait) if is_retryable_status(status, wait) else None
            if delay is None:
                raise error
            log.info("model %s: HTTP %s; retrying in %.2f s", self.model_id, status, delay)
            await anyio.sleep(delay)

    async def _rejection(self, response: httpx.Response) -> NoeticError:
        """The error for a non-2xx answer; the body stays in this frame (out of tracebacks)."""
        try:
            raw = await _read_capped(response, _ERROR_BODY_LIMIT)
        except httpx.HTTPError:
            raw = b""  # the status alone still says what happened
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        return error_from_status(
            response.status_code,
            raw,
            model_id=self.model_id,
            secret=self.provider.secret,
            retry_after=retry_after(response.headers),
        )

    async def _json(self, response: httpx.Response) -> Mapping[str, Any]:
        limit = self.provider.sse_limits.max_event
        raw = await _read_capped(response, limit + 1)
        if len(raw) > limit:
            raise SseError(f"the response body exceeds {limit} bytes")
        try:
            payload = json.loads(raw)
        except ValueError:
            raise SseError("the response body is not JSON") from None
        except RecursionError:  # the decoder recurses per nesting level
            raise SseError("the response body is nested too deeply to decode") from None
        if not isinstance(payload, Mapping):
            raise SseError("the response body is not a JSON object")
        return payload

    # --- accounting -------------------------------------------------------------------------

    def _response(
        self, request: ModelRequest, result: RoundResult, generation_id: str | None
    ) -> ModelResponse:
        usage = result.usage
        if result.served_model and result.served_model != request.model_id:
            log.debug("model %s was served by %s", request.model_id, result.served_model)
        return ModelResponse(
            items=result.items,
            usage=usage.round_usage() if usage is not None else RoundUsage(),
            cost=usage.cost if usage is not None else None,
            billed_cost=usage.billed_cost if usage is not None else None,
            model_id=request.model_id,
            generation_id=generation_id,
        )

    def _settles(self, usage: ProviderUsage | None) -> bool:
        """True when `usage` settles the call's bill (it came, and its cost is readable)."""
        if usage is None:
            return False
        if usage.cost_unreadable:
            log.warning(
                "model %s reported an unreadable cost; the call is held until reconciled", self.model_id
            )
            return False
        return True

    def _charge(self, request: ModelRequest, usage: ProviderUsage | None) -> bool:
        """Charge a failed call's in-band usage; True when its bill is settled that way."""
        if not self._settles(usage):
            return False
        assert usage is not None
        if usage.cost is not None and request.billing is not None:
            request.billing.hold(0.0).settle(usage.cost, usage.billed_cost or 0.0)
        return True

    async def _hold(self, request: ModelRequest, params: CallParams, generation_id: str | None) -> None:
        """Hold the ceiling of a call that ended without its bill and start reconciliation."""
        billing = request.billing
        if billing is None:
            log.warning(
                "model %s: generation %s ended without usage; its cost is unknown",
                self.model_id,
                generation_id,
            )
            return
        pricing = await self.provider.pricing(self.model_id)
        if pricing is not None and pricing.is_free:
            return
        if pricing is not None:
            amount = ceiling(pricing, prompt_estimate(request), params.max_output_tokens, params.extra_tools)
        else:  # no price list: the ceiling is unknown, and an unknown ceiling bounds nothing
            amount = math.inf
            log.warning(
                "model %s: no price list; the call is held without bound until reconciled", self.model_id
            )
        hold = billing.hold(amount)
        if generation_id is None:
            log.warning(
                "model %s: a cut-off call has no generation id; %.6f USD stays held", self.model_id, amount
            )
            return
        try:
            billing.run_in_background(partial(self.provider.reconcile, generation_id, hold))
        except NoeticError as exc:
            log.warning(
                "model %s: cannot reconcile generation %s (%s); it stays held",
                self.model_id,
                generation_id,
                exc,
            )


async def _deltas(
    events: AsyncGenerator[dict[str, Any], None],
    round_stream: RoundStream,
    call: _Call,
    clock: CallClock,
    secret: SecretStr | None,
) -> AsyncGenerator[list[TextDelta | ReasoningDelta], None]:
    """Each event's deltas, fed through the round's accumulator, each event awaited within the
    idle timeout and the total deadline (the cancel scope never spans a `yield`).

    Raw provider payloads live only in this frame, so they never appear among the locals of a
    traceback of the errors `stream` raises.
    """
    async with aclosing(events):
        while True:
            try:
                with anyio.move_on_after(clock.next_event()) as waited:
                    event = await events.__anext__()
            except StopAsyncIteration:
                return
            if waited.cancelled_caught:
                raise clock.expired()
            deltas = round_stream.feed(event)
            if call.generation_id is None and round_stream.generation_id is not None:
                call.generation_id = wire_text(round_stream.generation_id, secret)
            yield deltas


#: What reading a payload of an impossible shape raises; the round fails as a stream error.
_UNREADABLE = (MalformedPayload, TypeError, ValueError, KeyError, IndexError, AttributeError)


def _unreadable(exc: Exception, secret: SecretStr | None) -> str:
    """The stream-error text for a payload that could not be read (it names the field)."""
    if isinstance(exc, MalformedPayload):
        return f"an event could not be read: {exc}"
    detail = redact(str(exc), secret)[:200]
    return f"an event could not be read ({type(exc).__name__}: {detail})"


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    """Up to `limit` bytes of the body."""
    buffer = bytearray()
    chunks = response.aiter_bytes()
    try:
        async for chunk in chunks:
            buffer += chunk
            if len(buffer) >= limit:
                break
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]
    return bytes(buffer[:limit])
