"""The model-adapter contract: what the runtime sends a model and what comes back.

An adapter is any object with a `model_id` and an async-generator method
`stream(request, *, cancel)` that yields `TextDelta` / `ReasoningDelta` events while the model
works and ends with exactly one `ModelResponse`. `cancel` is the calling context's abort
signal; the runtime also cancels the consuming scope on abort, so an adapter's `finally` must
release its connection. Adapters holding resources may define `async def aclose()`; the harness
calls it on exit.

Paid calls that are cut off before their bill arrives use `request.billing`: `hold(ceiling)`
reserves the ceiling on the root context's `held_cost`; `settle(cost, billed_cost)` moves the
settled amount into `cost`/`billed_cost` and releases the hold. `billing.run_in_background`
runs reconciliation outside the caller's cancellation; the harness awaits it on exit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict

from noetic.items import Item
from noetic.records import FrozenRecord, Record, set_field
from noetic.usage import RoundUsage

__all__ = [
    "AbortSignal",
    "Billing",
    "CostHold",
    "ModelAdapter",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "ReasoningDelta",
    "TextDelta",
    "ToolDefinition",
]


class AbortSignal(Protocol):
    """The calling context's abort state, as an adapter sees it."""

    @property
    def aborted(self) -> bool:
        """True once the context was aborted."""
        ...

    @property
    def abort_reason(self) -> str | None:
        """The reason given to the first `abort` call."""
        ...

    async def wait_aborted(self) -> None:
        """Return once the context is aborted."""
        ...


class CostHold(Protocol):
    """A ceiling held on the root context's `held_cost` for a call without a settled bill."""

    @property
    def amount(self) -> float:
        """The USD held."""
        ...

    def settle(self, cost: float, billed_cost: float) -> None:
        """Release the hold and add the settled amounts to `cost` and `billed_cost`."""
        ...

    def release(self) -> None:
        """Release the hold without charging anything (the call was never billed)."""
        ...


class Billing(Protocol):
    """The runtime's side of paid-call accounting, handed to the adapter per request."""

    def hold(self, amount: float) -> CostHold:
        """Hold `amount` USD on the root context's `held_cost` until settled or released."""
        ...

    def run_in_background(self, job: Callable[[], Awaitable[None]]) -> None:
        """Run `job` outside the caller's cancellation; the harness awaits it on exit."""
        ...


class ToolDefinition(FrozenRecord):
    """A function tool as offered to the model: name, description, JSON Schema parameters."""

    __slots__ = ("description", "name", "parameters", "strict")
    name: str
    description: str
    parameters: Mapping[str, Any]
    strict: bool | None

    def __init__(
        self, name: str, description: str, parameters: Mapping[str, Any], strict: bool | None = None
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "description", description)
        set_field(self, "parameters", parameters)
        set_field(self, "strict", strict)


class ModelRequest(Record):
    """One model round: the assembled view and everything the provider needs besides.

    `params` left out is an empty dict of the request's own.
    """

    model_id: str
    items: Sequence[Item]
    instructions: str | None
    tools: Sequence[ToolDefinition]
    output_schema: Mapping[str, Any] | None
    params: Mapping[str, Any]
    cache_control: bool
    execution_id: str
    thread_id: str
    billing: Billing | None

    __slots__ = (
        "billing",
        "cache_control",
        "execution_id",
        "instructions",
        "items",
        "model_id",
        "output_schema",
        "params",
        "thread_id",
        "tools",
    )

    def __init__(
        self,
        model_id: str,
        items: Sequence[Item],
        instructions: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        output_schema: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        cache_control: bool = False,
        execution_id: str = "",
        thread_id: str = "",
        billing: Billing | None = None,
    ) -> None:
        self.model_id = model_id
        self.items = items
        self.instructions = instructions
        self.tools = tools
        self.output_schema = output_schema
        self.params = {} if params is None else params
        self.cache_control = cache_control
        self.execution_id = execution_id
        self.thread_id = thread_id
        self.billing = billing


class TextDelta(NamedTuple):
    """A piece of assistant text as it streams (a named tuple: one is made per delta)."""

    text: str
    item_id: str | None = None


class ReasoningDelta(NamedTuple):
    """A piece of reasoning text as it streams (a named tuple: one is made per delta)."""

    text: str
    item_id: str | None = None


class ModelResponse(BaseModel):
    """The final event of a model round.

    `cost` is the provider-reported USD (`None` when it reported none); `billed_cost` is what
    this call actually paid (`None` means "same as cost"). `generation_id` is the provider's
    id for the call, kept for reconciliation and support.
    """

    # Built on the first response rather than at `import noetic` (its schema holds every item type).
    model_config = ConfigDict(frozen=True, defer_build=True)

    items: tuple[Item, ...]
    usage: RoundUsage = RoundUsage()
    cost: float | None = None
    billed_cost: float | None = None
    model_id: str = ""
    generation_id: str | None = None


ModelEvent: TypeAlias = TextDelta | ReasoningDelta | ModelResponse


@runtime_checkable
class ModelAdapter(Protocol):
    """A model the runtime can call (see the module docstring for the contract)."""

    model_id: str

    def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        """Stream one round: deltas, then exactly one `ModelResponse`."""
        ...
