"""Loop termination predicates (rule LP-4).

An `until` is any callable taking the `LoopSnapshot` of the iteration just finished and
returning a bool or a `Verdict(stop, reason, feedback)` (it may be async). The built-ins live
on the `until` namespace; `any_` and `all_` combine them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from noetic.records import FrozenRecord, set_field

if TYPE_CHECKING:
    from noetic.usage import StepMeta, TokenUsage

__all__ = ["LoopSnapshot", "Until", "Verdict", "all_", "any_", "evaluate", "until"]


class Verdict(FrozenRecord):
    """Whether to stop, why, and feedback for `prepare_next`."""

    __slots__ = ("feedback", "reason", "stop")
    stop: bool
    reason: str | None
    feedback: str | None

    def __init__(self, stop: bool, reason: str | None = None, feedback: str | None = None) -> None:
        set_field(self, "stop", stop)
        set_field(self, "reason", reason)
        set_field(self, "feedback", feedback)


class LoopSnapshot(FrozenRecord):
    """What an `until` sees after each iteration.

    `held_cost`: USD held at ceiling on the root for cut-off or unreadable paid calls (AC-4).
    """

    __slots__ = (
        "cost",
        "depth",
        "elapsed",
        "held_cost",
        "history",
        "last_output",
        "last_step_meta",
        "last_text",
        "step_count",
        "tokens",
    )
    step_count: int
    tokens: TokenUsage
    elapsed: float
    cost: float
    last_output: Any
    last_text: str
    history: Sequence[Any]
    depth: int
    last_step_meta: StepMeta | None
    held_cost: float

    def __init__(
        self,
        step_count: int,
        tokens: TokenUsage,
        elapsed: float,
        cost: float,
        last_output: Any,
        last_text: str,
        history: Sequence[Any] = (),
        depth: int = 0,
        last_step_meta: StepMeta | None = None,
        held_cost: float = 0.0,
    ) -> None:
        set_field(self, "step_count", step_count)
        set_field(self, "tokens", tokens)
        set_field(self, "elapsed", elapsed)
        set_field(self, "cost", cost)
        set_field(self, "last_output", last_output)
        set_field(self, "last_text", last_text)
        set_field(self, "history", history)
        set_field(self, "depth", depth)
        set_field(self, "last_step_meta", last_step_meta)
        set_field(self, "held_cost", held_cost)


Until: TypeAlias = Callable[[LoopSnapshot], "bool | Verdict | Awaitable[bool | Verdict]"]


async def evaluate(predicate: Until, snapshot: LoopSnapshot) -> Verdict:
    """Run a predicate and normalise its answer to a `Verdict`."""
    result: Any = predicate(snapshot)
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, Verdict):
        return result
    return Verdict(bool(result))


class until:
    """The built-in predicates."""

    @staticmethod
    def max_steps(n: int) -> Until:
        """Stop once `n` iterations have completed."""

        def check(snap: LoopSnapshot) -> Verdict:
            done = snap.step_count >= n
            return Verdict(done, f"Reached max steps ({n})" if done else None)

        return check

    @staticmethod
    def max_cost(usd: float) -> Until:
        """Stop once the context's accumulated cost, plus any ceiling still held for calls
        without a settled bill, reaches `usd` (AC-4)."""

        def check(snap: LoopSnapshot) -> Verdict:
            done = snap.cost + snap.held_cost >= usd
            return Verdict(done, f"Reached max cost (${usd})" if done else None)

        return check

    @staticmethod
    def max_duration(seconds: float) -> Until:
        """Stop once the loop has run for `seconds`."""

        def check(snap: LoopSnapshot) -> Verdict:
            done = snap.elapsed >= seconds * 1000.0
            return Verdict(done, f"Reached max duration ({seconds} s)" if done else None)

        return check

    @staticmethod
    def no_tool_calls() -> Until:
        """Stop when the last model response asked for no tools (the ReAct stop).

        `call_model` runs the tool rounds itself and ends on an answer, so a loop around it
        stops after the first iteration that answered: the model is called exactly as often
        as the conversation needs. Steps that record only `tool_calls` are judged by those.
        """

        def check(snap: LoopSnapshot) -> Verdict:
            if snap.step_count < 1:
                return Verdict(False)
            meta = snap.last_step_meta
            calls = None
            if meta is not None:
                last = meta.last_response_tool_calls
                calls = last if last is not None else meta.tool_calls
            done = not calls
            return Verdict(done, "No tool calls in last response" if done else None)

        return check

    @staticmethod
    def output_contains(marker: str) -> Until:
        """Stop when the last output's text contains `marker`."""

        def check(snap: LoopSnapshot) -> Verdict:
            done = marker in snap.last_text
            return Verdict(done, f"Output contains {marker!r}" if done else None)

        return check

    @staticmethod
    def output_equals(value: Any) -> Until:
        """Stop when the last output equals `value`."""

        def check(snap: LoopSnapshot) -> Verdict:
            done = snap.last_output == value
            return Verdict(done, "Output matched" if done else None)

        return check

    @staticmethod
    def converged() -> Until:
        """Stop when two consecutive outputs have the same text."""
        previous: list[str] = []

        def check(snap: LoopSnapshot) -> Verdict:
            same = bool(previous) and previous[-1] == snap.last_text
            previous[:] = [snap.last_text]
            return Verdict(same, "Output converged" if same else None)

        return check

    @staticmethod
    def verified(fn: Callable[[Any], Any]) -> Until:
        """Stop when `fn(last_output)` passes: it returns True, or `(True, feedback)`."""

        async def check(snap: LoopSnapshot) -> Verdict:
            result = fn(snap.last_output)
            if inspect.isawaitable(result):
                result = await result
            passed, feedback = result if isinstance(result, tuple) else (bool(result), None)
            return Verdict(bool(passed), "Verification passed" if passed else None, feedback)

        return check

    @staticmethod
    def never() -> Until:
        """Never stop (the loop ends by abort, error or `max_iterations`)."""

        def check(snap: LoopSnapshot) -> Verdict:
            return Verdict(False)

        return check


def any_(*predicates: Until) -> Until:
    """Stop when any predicate says stop (the first stopping verdict's reason is kept)."""

    async def check(snap: LoopSnapshot) -> Verdict:
        feedback = None
        for predicate in predicates:
            verdict = await evaluate(predicate, snap)
            if verdict.stop:
                return verdict
            feedback = feedback or verdict.feedback
        return Verdict(False, feedback=feedback)

    return check


def all_(*predicates: Until) -> Until:
    """Stop when every predicate says stop (reasons are joined); `all_()` of nothing stops at
    once, as "every one of no predicates" holds (the TypeScript runtime agrees)."""

    async def check(snap: LoopSnapshot) -> Verdict:
        verdicts = [await evaluate(p, snap) for p in predicates]
        if all(v.stop for v in verdicts):
            return Verdict(True, "; ".join(v.reason for v in verdicts if v.reason) or None)
        return Verdict(False, feedback=next((v.feedback for v in verdicts if v.feedback), None))

    return check
