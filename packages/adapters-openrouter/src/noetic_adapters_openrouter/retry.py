"""When and how long to wait before re-sending a request.

A request is re-sent only while nothing has streamed back — before a `200` arrived — because
a retry after output started would bill twice and duplicate what the user already saw.
Re-sent: connection failures (the request never reached a model), and the statuses 408, 429,
500, 502, 503, 504, 529 (an overloaded upstream), and 402 *with* `Retry-After` (OpenRouter's transient in-flight budget). Never
re-sent: 400, 401, 403, a plain 402 (out of credits), or anything after the stream began.

The wait honours `Retry-After` (seconds or an HTTP date) when the server sent one — unless it
exceeds `max_retry_after`, in which case the error is raised at once so the caller can decide
— and otherwise is exponential backoff with full jitter, capped at `max_delay`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

__all__ = [
    "RETRYABLE_STATUSES",
    "RetryPolicy",
    "is_retryable_status",
    "is_retryable_transport",
    "retry_after",
]

#: Statuses re-sent without conditions; 402 needs `Retry-After` (see `is_retryable_status`).
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry (seconds). `max_attempts` counts the first try."""

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def delay(
        self, attempt: int, retry_after: float | None, *, rand: Callable[[], float] = random.random
    ) -> float | None:
        """Seconds to wait before attempt `attempt + 1` (`attempt` ≥ 1), or None to give up."""
        if attempt >= self.max_attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return ceiling * rand()


def is_retryable_status(status: int, retry_after_seconds: float | None) -> bool:
    """True for the `RETRYABLE_STATUSES`, and 402 when the server said when to retry."""
    return status in RETRYABLE_STATUSES or (status == 402 and retry_after_seconds is not None)


def is_retryable_transport(exc: httpx.HTTPError) -> bool:
    """True for failures that happened before any answer: connecting, pool waits, and a
    pooled connection the server had already closed (no response was received)."""
    return isinstance(
        exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout | httpx.RemoteProtocolError
    )


def retry_after(headers: httpx.Headers, *, now: datetime | None = None) -> float | None:
    """The `Retry-After` header in seconds (delta-seconds or HTTP date), None if absent/invalid."""
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        seconds: float = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)
