"""Conformance checks every model adapter must pass, parameterised by a factory.

An adapter package runs the whole suite in a few lines::

    import pytest
    from noetic.testing.model_conformance import MODEL_CONFORMANCE_CHECKS

    @pytest.mark.anyio
    @pytest.mark.parametrize("check", MODEL_CONFORMANCE_CHECKS, ids=lambda c: c.__name__)
    async def test_model_conformance(check):
        await check(make_subject)

`make_subject(scenario)` (plain or async) receives a `Scenario` — the rounds the model must
play, in order — and returns a `ConformanceSubject`: the adapter wired so that its model
behaves as scripted (a fake transport, a local server, a scripted model …) plus three hooks:

- `stalled` — an `anyio.Event` the subject sets when a `StallRound` is blocking mid-answer;
- `released` — an `anyio.Event` set once that stalled call's resources (connection, task,
  file) are released;
- `sent_call_ids(round_index)` — the `call_id`s of the `function_call` and
  `function_call_output` items the model received in that round.

What is checked (rules TU-2, TU-8 and the adapter contract in `noetic.model`): a round yields
deltas then exactly one final `ModelResponse`; text deltas concatenate to the final assistant
text; usage keeps `None` (not reported) apart from `0` (reported zero); cost is passed on;
tool calls come back under the declared tool name and round-trip with their `call_id`; an
abort cuts a stalled stream promptly, yields no response, releases the call's resources, and
leaves no cost hold open once background reconciliation has run.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TypeAlias

import anyio

from noetic.errors import NoeticError
from noetic.items import FunctionCallItem, FunctionCallOutputItem, Item, MessageItem, user_message
from noetic.model import (
    ModelAdapter,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    ToolDefinition,
)
from noetic.usage import RoundUsage

__all__ = [
    "MODEL_CONFORMANCE_CHECKS",
    "ConformanceSubject",
    "ManualAbort",
    "RecordedHold",
    "RecordingBilling",
    "Round",
    "Scenario",
    "StallRound",
    "SubjectFactory",
    "TextRound",
    "ToolCallRound",
    "check_abort_cuts_stream_and_releases",
    "check_cost_is_passed_on",
    "check_one_final_response",
    "check_text_deltas_concatenate",
    "check_tool_call_round_trip",
    "check_usage_absent_stays_none",
    "check_usage_reported_values",
    "check_usage_zero_stays_zero",
    "collect_round",
]

#: Seconds any single wait may take before the check fails as hung (a guard, not a timing).
HANG_GUARD = 10.0

#: The tool every tool-call scenario declares; the slash must survive the round trip.
TOOL = ToolDefinition(
    name="weather/lookup",
    description="Look up the weather of a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


# --- scenarios ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextRound:
    """The model answers `text`, reporting `usage` and `cost` (None: not reported)."""

    text: str
    usage: RoundUsage = field(default_factory=RoundUsage)
    cost: float | None = None


@dataclass(frozen=True, slots=True)
class ToolCallRound:
    """The model calls tool `name` with `arguments` (a JSON object string)."""

    name: str
    arguments: str
    usage: RoundUsage = field(default_factory=RoundUsage)
    cost: float | None = None


@dataclass(frozen=True, slots=True)
class StallRound:
    """The model starts answering (it may stream `text`) and then blocks until cancelled."""

    text: str = "partial answer"


Round: TypeAlias = TextRound | ToolCallRound | StallRound


@dataclass(frozen=True, slots=True)
class Scenario:
    """The rounds a subject's model plays, one per `stream` call, in order."""

    rounds: tuple[Round, ...]


@dataclass(slots=True)
class ConformanceSubject:
    """An adapter under test and the hooks the checks observe (see the module docstring)."""

    adapter: ModelAdapter
    stalled: anyio.Event
    released: anyio.Event
    sent_call_ids: Callable[[int], tuple[set[str], set[str]]]


SubjectFactory: TypeAlias = Callable[[Scenario], ConformanceSubject | Awaitable[ConformanceSubject]]


# --- runtime stand-ins ----------------------------------------------------------------------


class ManualAbort:
    """An `AbortSignal` the checks trigger by hand."""

    def __init__(self) -> None:
        self._reason: str | None = None
        self._aborted = False
        self._event = anyio.Event()

    @property
    def aborted(self) -> bool:
        """True once `abort` was called."""
        return self._aborted

    @property
    def abort_reason(self) -> str | None:
        """The reason given to `abort`."""
        return self._reason

    async def wait_aborted(self) -> None:
        """Return once aborted."""
        await self._event.wait()

    def abort(self, reason: str) -> None:
        """Abort (first call wins)."""
        if not self._aborted:
            self._aborted, self._reason = True, reason
            self._event.set()


@dataclass(slots=True)
class RecordedHold:
    """A `CostHold` that remembers how it was closed."""

    amount: float
    settled: tuple[float, float] | None = None
    released: bool = False

    @property
    def closed(self) -> bool:
        """True once settled or released."""
        return self.settled is not None or self.released

    def settle(self, cost: float, billed_cost: float) -> None:
        """Record the settlement (the first close wins)."""
        if not self.closed:
            self.settled = (cost, billed_cost)

    def release(self) -> None:
        """Record the release (the first close wins)."""
        if not self.closed:
            self.released = True


class RecordingBilling:
    """A `Billing` that records holds and runs background jobs when `drain` is awaited."""

    def __init__(self) -> None:
        self.holds: list[RecordedHold] = []
        self.jobs: list[Callable[[], Awaitable[None]]] = []

    def hold(self, amount: float) -> RecordedHold:
        """Record a hold."""
        hold = RecordedHold(amount)
        self.holds.append(hold)
        return hold

    def run_in_background(self, job: Callable[[], Awaitable[None]]) -> None:
        """Queue `job` for `drain`."""
        self.jobs.append(job)

    async def drain(self) -> None:
        """Run every queued job to completion, shielded like the harness does."""
        while self.jobs:
            job = self.jobs.pop(0)
            with anyio.CancelScope(shield=True), anyio.fail_after(HANG_GUARD):
                await job()

    def open_holds(self) -> list[RecordedHold]:
        """Holds neither settled nor released."""
        return [h for h in self.holds if not h.closed]


# --- helpers --------------------------------------------------------------------------------


async def _subject(factory: SubjectFactory, *rounds: Round) -> ConformanceSubject:
    made = factory(Scenario(tuple(rounds)))
    subject: ConformanceSubject = await made if inspect.isawaitable(made) else made
    return subject


def _request(subject: ConformanceSubject, items: Sequence[Item], billing: RecordingBilling) -> ModelRequest:
    return ModelRequest(model_id=subject.adapter.model_id, items=tuple(items), tools=(TOOL,), billing=billing)


async def _round(subject: ConformanceSubject, request: ModelRequest) -> list[ModelEvent]:
    events, error = await collect_round(subject.adapter, request)
    if error is not None:
        raise error
    return events


async def collect_round(
    adapter: ModelAdapter, request: ModelRequest
) -> tuple[list[ModelEvent], NoeticError | None]:
    """Play one round of `adapter`, returning the events it yielded and the `NoeticError` that ended it.

    For an adapter's own tests: the events come back even when the round fails part-way, and
    the round fails the test as hung (`TimeoutError`) after `HANG_GUARD` seconds.
    """
    events: list[ModelEvent] = []
    try:
        with anyio.fail_after(HANG_GUARD):
            async with aclosing(adapter.stream(request, cancel=ManualAbort())) as stream:  # type: ignore[type-var]
                async for event in stream:
                    events.append(event)
    except NoeticError as exc:
        return events, exc
    return events, None


def _final(events: Sequence[ModelEvent]) -> ModelResponse:
    finals = [e for e in events if isinstance(e, ModelResponse)]
    assert len(finals) == 1, f"a round must end with exactly one ModelResponse, got {len(finals)}"
    assert events[-1] is finals[0], "the ModelResponse must be the last event of a round"
    return finals[0]


def _assistant_text(response: ModelResponse) -> str:
    return "".join(i.text for i in response.items if isinstance(i, MessageItem) and i.role == "assistant")


async def _text_round(
    factory: SubjectFactory, round_: TextRound
) -> tuple[list[ModelEvent], RecordingBilling]:
    subject = await _subject(factory, round_)
    billing = RecordingBilling()
    events = await _round(subject, _request(subject, [user_message("Say something.")], billing))
    await billing.drain()
    return events, billing


# --- checks ---------------------------------------------------------------------------------


async def check_one_final_response(factory: SubjectFactory) -> None:
    """A round yields only deltas, then exactly one `ModelResponse`; no hold stays open."""
    events, billing = await _text_round(factory, TextRound("Hello from the conformance suite."))
    response = _final(events)
    assert all(type(e) in (TextDelta, ReasoningDelta) for e in events[:-1]), (
        "only deltas may precede the response"
    )
    assert isinstance(response.model_id, str)
    assert not billing.open_holds(), "a completed round must not leave a cost hold open"


async def check_text_deltas_concatenate(factory: SubjectFactory) -> None:
    """The text deltas of a round concatenate to the final assistant text."""
    text = "Streaming works: héllo, wörld — 你好 ✓"
    events, _ = await _text_round(factory, TextRound(text))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas, "a text answer must stream at least one TextDelta"
    assert "".join(deltas) == _assistant_text(_final(events)) == text


async def check_usage_absent_stays_none(factory: SubjectFactory) -> None:
    """TU-2: cache figures the provider did not report stay `None` (never 0)."""
    events, _ = await _text_round(factory, TextRound("ok", RoundUsage(input_tokens=11, output_tokens=7)))
    usage = _final(events).usage
    assert (usage.input_tokens, usage.output_tokens) == (11, 7)
    assert usage.cached_tokens is None, f"unreported cached_tokens must be None, got {usage.cached_tokens!r}"
    assert usage.cache_write_tokens is None, (
        f"unreported cache_write_tokens must be None, got {usage.cache_write_tokens!r}"
    )


async def check_usage_zero_stays_zero(factory: SubjectFactory) -> None:
    """TU-2: cache figures reported as zero stay `0` (never None)."""
    usage_in = RoundUsage(input_tokens=5, output_tokens=2, cached_tokens=0, cache_write_tokens=0)
    events, _ = await _text_round(factory, TextRound("ok", usage_in))
    usage = _final(events).usage
    assert usage.cached_tokens == 0, f"cached_tokens reported as 0 must stay 0, got {usage.cached_tokens!r}"
    assert usage.cache_write_tokens == 0, (
        f"cache_write_tokens reported as 0 must stay 0, got {usage.cache_write_tokens!r}"
    )


async def check_usage_reported_values(factory: SubjectFactory) -> None:
    """Reported token figures arrive unchanged."""
    usage_in = RoundUsage(input_tokens=120, output_tokens=30, cached_tokens=100, cache_write_tokens=20)
    events, _ = await _text_round(factory, TextRound("ok", usage_in))
    usage = _final(events).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.cache_write_tokens) == (
        120,
        30,
        100,
        20,
    )


async def check_cost_is_passed_on(factory: SubjectFactory) -> None:
    """TU-8: a reported cost arrives as `cost` (billed equal or unset); an unreported one is None."""
    events, _ = await _text_round(
        factory, TextRound("ok", RoundUsage(input_tokens=3, output_tokens=1), cost=0.0123)
    )
    response = _final(events)
    assert response.cost == 0.0123
    assert response.billed_cost in (None, 0.0123)
    events, _ = await _text_round(factory, TextRound("ok", RoundUsage(input_tokens=3, output_tokens=1)))
    assert _final(events).cost is None, "an unreported cost must be None, not 0"


async def check_tool_call_round_trip(factory: SubjectFactory) -> None:
    """A tool call comes back under the declared name and its call_id round-trips."""
    arguments = {"city": "Paris"}
    subject = await _subject(
        factory, ToolCallRound(TOOL.name, json.dumps(arguments)), TextRound("It is sunny.")
    )
    billing = RecordingBilling()
    question = user_message("What is the weather in Paris?")
    first = _final(await _round(subject, _request(subject, [question], billing)))
    calls = [i for i in first.items if isinstance(i, FunctionCallItem)]
    assert len(calls) == 1, f"expected one function_call item, got {first.items!r}"
    call = calls[0]
    assert call.name == TOOL.name, (
        f"the call must use the declared tool name {TOOL.name!r}, got {call.name!r}"
    )
    assert call.call_id, "a function_call needs a call_id"
    assert json.loads(call.arguments) == arguments
    output = FunctionCallOutputItem(call_id=call.call_id, output=json.dumps("sunny"))
    second = _final(await _round(subject, _request(subject, [question, *first.items, output], billing)))
    assert _assistant_text(second) == "It is sunny."
    sent_calls, sent_outputs = subject.sent_call_ids(1)
    assert call.call_id in sent_calls, "the function_call must be sent back with its call_id"
    assert call.call_id in sent_outputs, "the function_call_output must be sent with the same call_id"
    await billing.drain()
    assert not billing.open_holds()


async def check_abort_cuts_stream_and_releases(factory: SubjectFactory) -> None:
    """Abort cuts a stalled stream promptly: no response, resources released, no hold left open."""
    subject = await _subject(factory, StallRound())
    billing = RecordingBilling()
    signal = ManualAbort()
    scope = anyio.CancelScope()
    received: list[ModelEvent] = []
    finished = anyio.Event()

    async def consume() -> None:
        try:
            with scope:
                stream = subject.adapter.stream(
                    _request(subject, [user_message("Tell me a long story.")], billing), cancel=signal
                )
                async with aclosing(stream) as events:  # type: ignore[type-var]
                    async for event in events:
                        received.append(event)
        except NoeticError as exc:  # an adapter may report the abort itself
            if exc.code != "cancelled":
                raise
        finally:
            finished.set()

    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await subject.stalled.wait()
            signal.abort("conformance: abort while stalled")
            scope.cancel()
            await finished.wait()
            assert subject.released.is_set(), (
                "the stalled call's resources must be released when its stream ends"
            )
    assert scope.cancelled_caught or signal.aborted
    assert not any(isinstance(e, ModelResponse) for e in received), (
        "an aborted round must not yield a response"
    )
    await billing.drain()
    assert not billing.open_holds(), "background reconciliation must settle or release every hold"


#: Every check, for `pytest.mark.parametrize`.
MODEL_CONFORMANCE_CHECKS: tuple[Callable[[SubjectFactory], Awaitable[None]], ...] = (
    check_one_final_response,
    check_text_deltas_concatenate,
    check_usage_absent_stays_none,
    check_usage_zero_stays_zero,
    check_usage_reported_values,
    check_cost_is_passed_on,
    check_tool_call_round_trip,
    check_abort_cuts_stream_and_releases,
)
