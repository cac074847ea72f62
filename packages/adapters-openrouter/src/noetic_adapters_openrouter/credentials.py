"""Keeping the API key secret: where it is read, how it is sent, and how text is scrubbed.

The key lives only inside a `pydantic.SecretStr` (masked in every repr). It is read from the
argument or `OPENROUTER_API_KEY` at first use — a missing key is a `MISSING_API_KEY` config
error then, never at import. It leaves the process only as a Bearer header added per request
by `BearerAuth`, so it is never stored in client defaults, URLs or our own locals. Any text
that came from the provider (error messages, metadata) passes through `redact` before it
reaches an exception or a log line, and the package logger carries `RedactingFilter`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Generator

import httpx
from noetic.errors import NoeticConfigError
from pydantic import SecretStr

__all__ = ["API_KEY_ENV", "LOGGER_NAME", "BearerAuth", "RedactingFilter", "log", "read_api_key", "redact"]

#: The environment variable read when no key is passed.
API_KEY_ENV = "OPENROUTER_API_KEY"
#: The one logger every module of the package writes to (it carries `RedactingFilter`).
LOGGER_NAME = "noetic_adapters_openrouter"

# OpenRouter keys (`sk-or-v1-…`), other `sk-` style keys, and any Bearer credential.
_KEY_PATTERN = re.compile(r"(?:\bsk-[A-Za-z0-9_\-]{8,})|(?:(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{8,})")
_MASK = "[redacted]"


def read_api_key(explicit: SecretStr | None) -> SecretStr:
    """The key to use: the explicit one, else the environment's; raise `MISSING_API_KEY`."""
    if explicit is not None and explicit.get_secret_value():
        return explicit
    from_env = os.environ.get(API_KEY_ENV, "").strip()
    if from_env:
        return SecretStr(from_env)
    raise NoeticConfigError(
        "MISSING_API_KEY",
        "no OpenRouter API key is configured",
        hint=f"Set the {API_KEY_ENV} environment variable or pass OpenRouterProvider(api_key=...).",
    )


def redact(text: str, secret: SecretStr | None = None) -> str:
    """`text` with the key (when given) and anything shaped like an API key masked."""
    if secret is not None:
        value = secret.get_secret_value()
        if value:
            text = text.replace(value, _MASK)
    return _KEY_PATTERN.sub(_MASK, text)


class BearerAuth(httpx.Auth):
    """Adds `Authorization: Bearer <key>` to each request; its repr shows no key."""

    def __init__(self, key: SecretStr):
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Set the Authorization header and send the request once."""
        request.headers["Authorization"] = "Bearer " + self._key.get_secret_value()
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(key=SecretStr('**********'))"


class RedactingFilter(logging.Filter):
    """A logging filter that masks key-shaped strings in a record's message and arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place; never drops it."""
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


#: The package logger.
log = logging.getLogger(LOGGER_NAME)
log.addFilter(RedactingFilter())
