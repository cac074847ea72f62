"""OpenRouter failures as `NoeticError`s: one taxonomy for both endpoints.

Codes:

- `model_rate_limit` — HTTP 429, an in-band `rate_limit_exceeded`/429, or a 402 that carries
  `Retry-After` (OpenRouter's transient in-flight spending budget);
- `model_refused` — moderation: a 403 whose metadata names `reasons`/`flagged_input`, or an
  in-band content-policy error;
- `model_stream_error` — the stream broke: cut mid-event, ended without its final event,
  malformed or oversized data, a dropped connection or an idle timeout;
- `model_error` — everything else the provider rejected or reported (400, 401, plain 402,
  403, 404, 408, 5xx, 529, in-band errors).

Every error keeps the provider's message and structured details: `status`, `provider_code`,
`error_type`, `provider_name`, `provider_message`, `limit_source`, `retry_after`, `retryable`,
`generation_id`, `in_stream`, and `usage`/`cost` when the error arrived together with usage.
Every detail that came from the wire passes through `wire_text`: the key and anything
key-shaped are masked, non-text values become their JSON text, and each is capped in length —
so a proxy echoing the key puts it nowhere. The message ends with what to change. No error ever chains the
underlying httpx exception (its frames hold request headers); `transport` names its type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
from noetic.errors import NoeticError
from pydantic import SecretStr

from noetic_adapters_openrouter.credentials import API_KEY_ENV, redact
from noetic_adapters_openrouter.retry import RETRYABLE_STATUSES
from noetic_adapters_openrouter.usage import ProviderUsage
from noetic_adapters_openrouter.wire import mapping

__all__ = ["error_from_payload", "error_from_status", "stream_error", "transport_error", "wire_text"]

_MAX_TEXT = 500
_MAX_FIELD = 200

_GUIDANCE = {
    400: "Check the request: the model id, the params and the item shapes.",
    401: f"Check the API key (OpenRouterProvider(api_key=...) or {API_KEY_ENV}): it is invalid, expired or revoked.",
    402: "Add credits to the OpenRouter account or lower max_output_tokens.",
    403: "The request was blocked by moderation, a guardrail or a key/workspace limit; change the input or the limits.",
    404: "Check the model id against https://openrouter.ai/models.",
    408: "The provider timed out; retry later.",
    413: "Shorten the prompt or the attachments.",
    429: "The model or key is rate limited; retry later, or choose another model or provider.",
    500: "The provider failed internally; retry later.",
    502: "The model's provider is down or answered invalidly; retry, or route to another provider.",
    503: "No provider meets the routing requirements; relax the provider= options or retry later.",
    504: "The provider timed out; retry later.",
    529: "The model's provider is overloaded; retry later, or route to another provider.",
}
_REFUSAL_CODES = frozenset({"content_filter", "image_content_policy_violation", "moderation"})
_RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded", "rate_limit", "429"})


def error_from_status(
    status: int,
    body: bytes,
    *,
    model_id: str,
    secret: SecretStr | None,
    retry_after: float | None = None,
) -> NoeticError:
    """The error for a non-200 answer (the request was rejected before generation)."""
    payload = _json(body)
    if payload is None:
        text = redact(body.decode("utf-8", "replace").strip(), secret)[:_MAX_TEXT]
        payload = {"error": {"code": status, "message": text or httpx.codes.get_reason_phrase(status)}}
    return error_from_payload(
        payload, model_id=model_id, secret=secret, status=status, retry_after=retry_after, in_stream=False
    )


def error_from_payload(
    payload: Mapping[str, Any],
    *,
    model_id: str,
    secret: SecretStr | None,
    status: int | None = None,
    retry_after: float | None = None,
    in_stream: bool = True,
    generation_id: str | None = None,
    usage: ProviderUsage | None = None,
) -> NoeticError:
    """The error described by an OpenRouter error object (a body, an event, a failed response)."""
    info = mapping(payload.get("error")) or payload
    raw_code = info.get("code")
    provider_code: int | str | None = (
        raw_code
        if isinstance(raw_code, int) and not isinstance(raw_code, bool)
        else wire_text(raw_code, secret)
    )
    metadata = mapping(info.get("metadata"))
    error_type = wire_text(payload.get("error_type") or info.get("type"), secret)
    if error_type == "error":  # the bare `error` event's own type, not a category
        error_type = None
    message = redact(str(info.get("message") or "the provider reported an error"), secret)[:_MAX_TEXT]
    raw = metadata.get("raw")
    if raw is not None:
        raw_text = redact(raw if isinstance(raw, str) else json.dumps(raw, default=str), secret)[:_MAX_TEXT]
        message = f"{message} ({raw_text})"
    effective = status if status is not None else (provider_code if isinstance(provider_code, int) else None)
    code = _code(effective, provider_code, error_type, metadata, retry_after)
    guidance = _GUIDANCE.get(effective or 0, "")
    if code == "model_rate_limit" and effective == 402:
        guidance = "Too many paid requests are in flight for the account balance; retry after Retry-After."
    where = f"HTTP {status}" if status is not None else "an error inside the stream"
    details: dict[str, Any] = {
        "status": status,
        "provider_code": provider_code,
        "error_type": error_type,
        "provider_name": wire_text(metadata.get("provider_name"), secret),
        "provider_message": message,
        "limit_source": wire_text(metadata.get("limit_source"), secret),
        "retry_after": retry_after,
        "retryable": code == "model_rate_limit" or effective in RETRYABLE_STATUSES,
        "generation_id": wire_text(generation_id, secret),
        "in_stream": in_stream,
        "model_id": model_id,
    }
    if usage is not None:
        details["usage"] = usage.round_usage()
        details["cost"] = usage.cost
    text = f"OpenRouter answered {where} for model {model_id!r}: {message.rstrip('. ')}."
    return NoeticError(code, f"{text} {guidance}".strip(), **details)


def wire_text(value: Any, secret: SecretStr | None) -> str | None:
    """A value from the provider made safe to keep in an error: None stays None, anything else
    becomes text (JSON for non-strings) with the key and key-shaped strings masked, capped."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return redact(text, secret)[:_MAX_FIELD]  # masked before the cut: no key is ever half-kept


def stream_error(
    message: str, *, model_id: str, generation_id: str | None, timeout: bool = False
) -> NoeticError:
    """A broken stream: the call may have been billed and is held until reconciled."""
    hint = (
        "The stream was idle for longer than the read timeout; raise OpenRouterProvider(timeout=...) or retry."
        if timeout
        else "The call did not finish; retry the step."
    )
    return NoeticError(
        "model_stream_error",
        f"the OpenRouter stream for model {model_id!r} broke: {message}. {hint}",
        generation_id=generation_id,
        retryable=True,
        in_stream=True,
        model_id=model_id,
    )


def transport_error(
    exc: httpx.HTTPError, *, model_id: str, started: bool, generation_id: str | None = None
) -> NoeticError:
    """A transport failure before (`started=False`) or during the answer, described without
    chaining the httpx exception."""
    kind = type(exc).__name__
    timeout = isinstance(exc, httpx.TimeoutException)
    if started:
        err = stream_error(kind, model_id=model_id, generation_id=generation_id, timeout=timeout)
        err.details["transport"] = kind
        return err
    hint = (
        "Raise OpenRouterProvider(timeout=...) or retry later."
        if timeout
        else "Check the network, the base URL and any proxy settings."
    )
    return NoeticError(
        "model_error",
        f"no answer from OpenRouter for model {model_id!r} ({kind}). {hint}",
        transport=kind,
        retryable=True,
        in_stream=False,
        model_id=model_id,
    )


def _code(
    status: int | None,
    provider_code: Any,
    error_type: Any,
    metadata: Mapping[str, Any],
    retry_after: float | None,
) -> str:
    pcode = str(provider_code) if provider_code is not None else ""
    if status == 429 or pcode in _RATE_LIMIT_CODES or error_type == "rate_limit":
        return "model_rate_limit"
    if status == 402 and retry_after is not None:
        return "model_rate_limit"
    if pcode in _REFUSAL_CODES or error_type in _REFUSAL_CODES:
        return "model_refused"
    if status == 403 and ("reasons" in metadata or "flagged_input" in metadata):
        return "model_refused"
    return "model_error"


def _json(body: bytes) -> Mapping[str, Any] | None:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to decode
        return None
    return value if isinstance(value, Mapping) else None
