"""Paid calls cut off before their bill: the held ceiling and its reconciliation.

OpenRouter charges a call when it finishes, and an aborted or broken stream never delivers
its usage — some providers keep generating and billing after the client is gone. Such a call
is **held**: the root context's `held_cost` reserves the call's ceiling,

    prompt estimate * prompt price + output bound * completion price
    + per-request fee + web-search fee * searches allowed (`openrouter:web_search` tools),

with prices from `GET /models` (fetched on the first cut-off, then cached per provider) and the
output bound from `max_output_tokens`, else the model's own completion limit, else its
context length. Then a background job polls `GET /generation?id=…` — which answers 404 until
the record exists — with capped exponential backoff; once it answers, `total_cost` becomes
the call's `cost` and `billed_cost` and the hold is released. The job runs through
`billing.run_in_background`, so the caller's cancellation cannot stop it; leaving the
harness waits for it (at most the harness's `background_grace`) before closing the adapters
and their HTTP client. If the generation never appears in time (or the key may not read it),
the hold stays: `held_cost` then is an honest upper bound of unsettled spend. Free models hold
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from noetic.model import CostHold, ModelRequest
from noetic.tokens import estimate_items, estimate_text, estimate_value

from noetic_adapters_openrouter.credentials import log
from noetic_adapters_openrouter.wire import count, mapping, number

__all__ = ["BillingPolicy", "ModelPricing", "PricingCatalog", "ceiling", "prompt_estimate", "reconcile"]

_RETRY_STATUSES = frozenset({404, 408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class BillingPolicy:
    """Timing of held-cost work (seconds): the pricing fetch and the generation polling."""

    pricing_timeout: float = 5.0
    first_poll_delay: float = 1.0
    max_poll_delay: float = 8.0
    reconcile_timeout: float = 90.0


@dataclass(frozen=True, slots=True)
class ModelPricing:
    """USD prices of one model (per token, per request, per search) and its limits."""

    prompt: float
    completion: float
    request: float = 0.0
    web_search: float = 0.0
    max_completion_tokens: int | None = None
    context_length: int | None = None

    @property
    def is_free(self) -> bool:
        """True when nothing about a call of this model costs money."""
        return not (self.prompt or self.completion or self.request or self.web_search)

    @classmethod
    def from_wire(cls, entry: Mapping[str, Any]) -> ModelPricing | None:
        """One `/models` entry's pricing; None when the prices are missing or negative."""
        pricing = entry.get("pricing")
        if not isinstance(pricing, Mapping):
            return None
        prompt, completion = _price(pricing.get("prompt")), _price(pricing.get("completion"))
        if prompt is None or completion is None:
            return None
        top = mapping(entry.get("top_provider"))
        return cls(
            prompt=prompt,
            completion=completion,
            request=_price(pricing.get("request")) or 0.0,
            web_search=_price(pricing.get("web_search")) or 0.0,
            max_completion_tokens=_count(top.get("max_completion_tokens")),
            context_length=_count(entry.get("context_length")),
        )


class PricingCatalog:
    """Model prices from `GET /models`, fetched once on first need and shared by all calls."""

    def __init__(self) -> None:
        self._prices: dict[str, ModelPricing] | None = None
        self._lock: anyio.Lock | None = None

    async def get(
        self, client: httpx.AsyncClient, url: str, auth: httpx.Auth, model_id: str
    ) -> ModelPricing | None:
        """The pricing of `model_id` (variants such as `:free` fall back to the base id)."""
        if self._prices is None:
            if self._lock is None:
                self._lock = anyio.Lock()
            async with self._lock:
                if self._prices is None:
                    self._prices = await _fetch_prices(client, url, auth)
        prices = self._prices or {}
        return prices.get(model_id) or prices.get(model_id.partition(":")[0])


async def _fetch_prices(
    client: httpx.AsyncClient, url: str, auth: httpx.Auth
) -> dict[str, ModelPricing] | None:
    try:
        response = await client.get(url, auth=auth)
    except httpx.HTTPError as exc:
        log.warning("fetching OpenRouter model prices failed (%s)", type(exc).__name__)
        return None
    if response.status_code != 200:
        log.warning("fetching OpenRouter model prices failed: HTTP %s", response.status_code)
        return None
    try:
        entries = response.json().get("data")
    except (ValueError, AttributeError):
        entries = None
    if not isinstance(entries, list):
        log.warning("OpenRouter model prices came in an unexpected shape")
        return None
    prices: dict[str, ModelPricing] = {}
    for entry in entries:
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
            pricing = ModelPricing.from_wire(entry)
            if pricing is not None:
                prices[entry["id"]] = pricing
    return prices


def prompt_estimate(request: ModelRequest) -> int:
    """Tokens the request's prompt is estimated to take (items, instructions, tools)."""
    tools = sum(
        estimate_value({"name": t.name, "description": t.description, "parameters": dict(t.parameters)})
        for t in request.tools
    )
    return estimate_items(request.items) + estimate_text(request.instructions or "") + tools


def ceiling(
    pricing: ModelPricing,
    prompt_tokens: int,
    max_output_tokens: int | None,
    extra_tools: Sequence[Mapping[str, Any]] = (),
) -> float:
    """The most a call can cost (see the module docstring)."""
    bound = max_output_tokens or pricing.max_completion_tokens
    if bound is None and pricing.context_length is not None:
        bound = max(pricing.context_length - prompt_tokens, 0)
    searches = sum(_max_uses(t) for t in extra_tools if t.get("type") == "openrouter:web_search")
    return (
        prompt_tokens * pricing.prompt
        + (bound or 0) * pricing.completion
        + pricing.request
        + searches * pricing.web_search
    )


async def reconcile(
    client: httpx.AsyncClient,
    url: str,
    auth: httpx.Auth,
    generation_id: str,
    hold: CostHold,
    policy: BillingPolicy,
) -> None:
    """Poll the generation record until it settles `hold` (see the module docstring)."""
    delay = policy.first_poll_delay
    with anyio.move_on_after(policy.reconcile_timeout):
        while True:
            await anyio.sleep(delay)
            delay = min(delay * 2, policy.max_poll_delay)
            try:
                response = await client.get(url, params={"id": generation_id}, auth=auth)
            except httpx.HTTPError as exc:
                log.info("generation %s: lookup failed (%s); retrying", generation_id, type(exc).__name__)
                continue
            if response.status_code in _RETRY_STATUSES:
                log.debug("generation %s: HTTP %s; retrying", generation_id, response.status_code)
                continue
            total = _total_cost(response) if response.status_code == 200 else None
            if total is None:
                log.warning(
                    "generation %s: cannot reconcile (HTTP %s); %.6f USD stays held",
                    generation_id,
                    response.status_code,
                    hold.amount,
                )
                return
            hold.settle(total, total)
            log.info("generation %s settled at %.6f USD (held %.6f)", generation_id, total, hold.amount)
            return
    log.warning(
        "generation %s: no record after %.0f s; %.6f USD stays held",
        generation_id,
        policy.reconcile_timeout,
        hold.amount,
    )


def _total_cost(response: httpx.Response) -> float | None:
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        return None
    return number(mapping(data).get("total_cost"))


def _price(value: Any) -> float | None:
    try:
        price = float(value)
    except (TypeError, ValueError):
        return None
    return price if price >= 0 else None


def _count(value: Any) -> int | None:
    n = count(value)
    return n if n is not None and n > 0 else None


def _max_uses(tool: Mapping[str, Any]) -> int:
    uses = count(mapping(tool.get("parameters")).get("max_uses"))
    return uses if uses is not None and uses > 0 else 1
