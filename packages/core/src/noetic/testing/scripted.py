"""`ScriptedModel`: a model adapter that plays back a script, for tests, demos and benchmarks.

Each script entry is one model round: a reply from `text_reply` / `tool_call_reply`, a list of
replies merged into one round (several tool calls at once), or a function
`(request) -> reply` (plain or async) for dynamic behaviour. Text replies stream as deltas.
Every request is recorded in `.calls`. When the script runs out, the model answers with
`default(request)` if one was given, else the call fails with `script_exhausted`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from noetic.errors import NoeticConfigError, NoeticError
from noetic.ids import new_item_id
from noetic.items import FunctionCallItem, Item, MessageItem, OutputText, item_text
from noetic.model import AbortSignal, ModelEvent, ModelRequest, ModelResponse, TextDelta
from noetic.usage import RoundUsage, add_optional

__all__ = ["ScriptedModel", "ScriptedReply", "text_reply", "tool_call_reply"]

UsageLike: TypeAlias = RoundUsage | Mapping[str, int | None] | None


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One scripted round: text and/or tool calls, with usage, cost and billed cost."""

    text: str | None = None
    calls: tuple[tuple[str, str], ...] = ()
    usage: RoundUsage = field(default_factory=RoundUsage)
    cost: float | None = None
    billed_cost: float | None = None


def _usage(usage: UsageLike) -> RoundUsage:
    if usage is None:
        return RoundUsage()
    return usage if isinstance(usage, RoundUsage) else RoundUsage.model_validate(dict(usage))


def text_reply(
    text: str, *, usage: UsageLike = None, cost: float | None = None, billed_cost: float | None = None
) -> ScriptedReply:
    """A round in which the model answers `text`."""
    return ScriptedReply(text=text, usage=_usage(usage), cost=cost, billed_cost=billed_cost)


def tool_call_reply(
    name: str,
    args: Mapping[str, Any] | str,
    *,
    usage: UsageLike = None,
    cost: float | None = None,
    billed_cost: float | None = None,
) -> ScriptedReply:
    """A round in which the model calls tool `name` with `args` (a dict or a JSON string)."""
    arguments = args if isinstance(args, str) else json.dumps(dict(args))
    return ScriptedReply(calls=((name, arguments),), usage=_usage(usage), cost=cost, billed_cost=billed_cost)


def _merge(replies: Sequence[ScriptedReply]) -> ScriptedReply:
    texts = [r.text for r in replies if r.text is not None]
    costs = [r.cost for r in replies if r.cost is not None]
    billed = [r.billed_cost for r in replies if r.billed_cost is not None]
    usage = RoundUsage()
    for r in replies:
        usage = RoundUsage(
            input_tokens=usage.input_tokens + r.usage.input_tokens,
            output_tokens=usage.output_tokens + r.usage.output_tokens,
            cached_tokens=add_optional(usage.cached_tokens, r.usage.cached_tokens),
            cache_write_tokens=add_optional(usage.cache_write_tokens, r.usage.cache_write_tokens),
        )
    return ScriptedReply(
        text="".join(texts) if texts else None,
        calls=tuple(c for r in replies for c in r.calls),
        usage=usage,
        cost=sum(costs) if costs else None,
        billed_cost=sum(billed) if billed else None,
    )


ScriptEntry: TypeAlias = ScriptedReply | Sequence[ScriptedReply] | Callable[[ModelRequest], Any]


class ScriptedModel:
    """A scripted model adapter; see the module docstring."""

    #: The GenAI provider name traces carry (`gen_ai.provider.name`).
    provider_name = "noetic.scripted"

    def __init__(
        self,
        script: Sequence[ScriptEntry] = (),
        *,
        model_id: str = "scripted",
        delta_size: int = 8,
        default: Callable[[ModelRequest], Any] | None = None,
        structured_output: bool = False,
    ):
        self.model_id = model_id
        #: Whether this model claims to honour `request.output_schema` (as a provider with
        #: structured output does); a `decide` step then reads its replies as native.
        self.structured_output = structured_output
        self.delta_size = max(1, delta_size)
        self.default = default
        self.calls: list[ModelRequest] = []
        self._script = list(script)
        self._next = 0

    @classmethod
    def echo(cls, *, model_id: str = "scripted:echo") -> ScriptedModel:
        """A model that answers every request with the text of its last user message."""

        def answer(request: ModelRequest) -> ScriptedReply:
            last = next((i for i in reversed(request.items) if getattr(i, "role", None) == "user"), None)
            return text_reply(item_text(last) if last is not None else "")

        return cls(model_id=model_id, default=answer)

    @property
    def remaining(self) -> int:
        """Script entries not yet played."""
        return len(self._script) - self._next

    async def _reply(self, request: ModelRequest) -> ScriptedReply:
        if self._next < len(self._script):
            entry: Any = self._script[self._next]
            self._next += 1
        elif self.default is not None:
            entry = self.default
        else:
            raise NoeticError(
                "script_exhausted",
                f"ScriptedModel {self.model_id!r} was called {len(self.calls)} times "
                f"but its script has {len(self._script)} replies",
                calls=len(self.calls),
            )
        if callable(entry) and not isinstance(entry, ScriptedReply):
            entry = entry(request)
            if inspect.isawaitable(entry):
                entry = await entry
        if isinstance(entry, ScriptedReply):
            return entry
        return _merge(list(entry))

    async def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        """Play the next round: text deltas, then the response."""
        self.calls.append(request)
        reply = await self._reply(request)
        items: list[Item] = []
        if reply.text is not None:
            message_id = new_item_id("msg")
            text, size = reply.text, self.delta_size
            for start in range(0, len(text), size):
                yield TextDelta(text[start : start + size], message_id)
            items.append(MessageItem(id=message_id, role="assistant", content=[OutputText(text=text)]))
        for name, arguments in reply.calls:
            items.append(FunctionCallItem(call_id=new_item_id("call"), name=name, arguments=arguments))
        yield ModelResponse(
            items=tuple(items),
            usage=reply.usage,
            cost=reply.cost,
            billed_cost=reply.billed_cost,
            model_id=self.model_id,
        )


def scripted_model_factory(model_id: str) -> ScriptedModel:
    """The built-in `scripted` adapter: `model="scripted:echo"` (or `"scripted"`) is the
    offline echo model. Any other name is `UNKNOWN_MODEL`: a typo must not silently echo."""
    if model_id not in ("", "echo"):
        raise NoeticConfigError(
            "UNKNOWN_MODEL",
            f"model 'scripted:{model_id}': the offline scripted provider has one model, 'echo'",
            hint="Use 'scripted:echo', or build a noetic.testing.ScriptedModel for scripted replies.",
        )
    return ScriptedModel.echo()
