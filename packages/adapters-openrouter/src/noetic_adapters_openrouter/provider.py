"""`OpenRouterProvider`: the account-level object — key, base URL, HTTP client, policies.

One provider owns one `httpx.AsyncClient` (created on first use, with bounded connection
pools and timeouts whose `read` part bounds silence on the socket; `deadlines` adds an idle
timeout between events, which keep-alive comments do not reset, and a total deadline per call) and hands out model adapters with `.model(id, api="responses" | "chat")`.
Pass `http_client=` to use your own client; the provider then never closes it. The key is
read from `api_key=` or `OPENROUTER_API_KEY` at first use and only ever sent as a Bearer
header; attribution headers (`HTTP-Referer`, `X-Title`) go with every request.

`model_from_id` is the registry target behind `model="openrouter:<id>"` (and bare ids when
this is the only installed adapter): it builds a provider from the environment
(`OPENROUTER_API_KEY`, optional `OPENROUTER_BASE_URL`) that the returned adapter owns, so the
harness closes it on exit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from types import TracebackType
from typing import Any, Literal

import anyio
import httpx
from noetic.model import CostHold
from pydantic import SecretStr

from noetic_adapters_openrouter.adapter import OpenRouterModel
from noetic_adapters_openrouter.billing import BillingPolicy, ModelPricing, PricingCatalog, reconcile
from noetic_adapters_openrouter.credentials import BearerAuth, read_api_key
from noetic_adapters_openrouter.deadlines import Deadlines
from noetic_adapters_openrouter.retry import RetryPolicy
from noetic_adapters_openrouter.sse import SseLimits

__all__ = ["BASE_URL_ENV", "DEFAULT_BASE_URL", "OpenRouterProvider", "model_from_id"]

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
#: Environment variable overriding the base URL (a gateway or proxy in front of OpenRouter).
BASE_URL_ENV = "OPENROUTER_BASE_URL"
#: Seconds: `read` is the longest silence (not a byte) tolerated on the socket.
DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=30.0, pool=30.0)
DEFAULT_LIMITS = httpx.Limits(max_connections=64, max_keepalive_connections=16, keepalive_expiry=30.0)


def _user_agent() -> str:
    try:
        return f"noetic-adapters-openrouter/{version('noetic-adapters-openrouter')}"
    except PackageNotFoundError:
        return "noetic-adapters-openrouter"


class OpenRouterProvider:
    """An OpenRouter account: see the module docstring.

    `timeout` is an `httpx.Timeout`, or a number of seconds used as the socket read timeout
    with the other defaults kept. `deadlines` bounds each call (idle between events, total;
    see `noetic_adapters_openrouter.deadlines`). `retry`, `billing` and `sse_limits` tune
    retries, held-cost reconciliation and stream size caps.
    """

    def __init__(
        self,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        *,
        app_url: str | None = None,
        app_title: str | None = "Noetic",
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        billing: BillingPolicy | None = None,
        sse_limits: SseLimits | None = None,
        deadlines: Deadlines | None = None,
    ):
        self._explicit_key = SecretStr(api_key) if isinstance(api_key, str) else api_key
        self._key: SecretStr | None = None
        self.base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        self._client = http_client
        self._owns_client = http_client is None
        if isinstance(timeout, int | float):
            timeout = httpx.Timeout(
                connect=DEFAULT_TIMEOUT.connect,
                read=float(timeout),
                write=DEFAULT_TIMEOUT.write,
                pool=DEFAULT_TIMEOUT.pool,
            )
        self.timeout = timeout or DEFAULT_TIMEOUT
        self.retry = retry or RetryPolicy()
        self.billing = billing or BillingPolicy()
        self.sse_limits = sse_limits or SseLimits()
        self.deadlines = deadlines or Deadlines()
        headers = {"User-Agent": _user_agent()}
        if app_url:
            headers["HTTP-Referer"] = app_url
        if app_title:
            headers["X-Title"] = app_title
        self.headers: Mapping[str, str] = headers
        self._catalog = PricingCatalog()

    def model(
        self,
        model_id: str,
        *,
        api: Literal["responses", "chat"] = "responses",
        stream: bool = True,
        params: Mapping[str, Any] | None = None,
    ) -> OpenRouterModel:
        """A model adapter for `model_id` on the Responses (default) or Chat Completions API.

        `params` are defaults merged under each call's `params`; `stream=False` asks for
        whole JSON answers instead of an event stream.
        """
        return OpenRouterModel(self, model_id, api=api, stream=stream, params=params)

    # --- what adapters use ------------------------------------------------------------------

    def client(self) -> httpx.AsyncClient:
        """The HTTP client (built on first use unless one was given)."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self.timeout, limits=DEFAULT_LIMITS, follow_redirects=False
            )
        return self._client

    def auth(self) -> BearerAuth:
        """The request authentication; raises `MISSING_API_KEY` when no key is configured."""
        if self._key is None:
            self._key = read_api_key(self._explicit_key)
        return BearerAuth(self._key)

    @property
    def secret(self) -> SecretStr | None:
        """The key in use, for scrubbing provider text (None before first use)."""
        return self._key or self._explicit_key

    def url(self, path: str) -> str:
        """The absolute URL of an API path such as `/responses`."""
        return self.base_url + path

    async def pricing(self, model_id: str) -> ModelPricing | None:
        """The model's prices (fetched once per provider; None if unavailable in time, or if
        the price list cannot be decoded)."""
        with anyio.move_on_after(self.billing.pricing_timeout):
            try:
                return await self._catalog.get(self.client(), self.url("/models"), self.auth(), model_id)
            except RecursionError:  # a price list nested beyond the JSON decoder's recursion
                return None
        return None

    async def reconcile(self, generation_id: str, hold: CostHold) -> None:
        """Settle `hold` from the generation record (see `billing`)."""
        await reconcile(
            self.client(), self.url("/generation"), self.auth(), generation_id, hold, self.billing
        )

    # --- lifecycle --------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def __aenter__(self) -> OpenRouterProvider:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        key = (
            "SecretStr('**********')" if self.secret is not None else "None (OPENROUTER_API_KEY at first use)"
        )
        return f"OpenRouterProvider(base_url={self.base_url!r}, api_key={key})"


def model_from_id(model_id: str) -> OpenRouterModel:
    """The registry target: an adapter for `model_id` owning a provider built from the environment."""
    return OpenRouterModel(OpenRouterProvider(), model_id, owns_provider=True)
