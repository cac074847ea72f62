"""The guards of context layers: `after_model_call` (LY-5) and `before_tool_call` (LY-6).

Both run the active layers that define the hook one after another in slot order (ties in array
order).

- **`after_model_call(ctx, response)`** judges each model response of a `call_model` round
  before its items reach the log. It returns a `ModelCallDecision` (None allows): the first
  `deny` stops the others and fails the step with `steering_denied`; otherwise any `guide`
  wins over `allow`, and the guidance of every guiding layer is joined. A guided round drops
  the response, logs the guidance as a developer message (sent last in the step's later
  requests, `LayeredCall.guide`) and calls the model again, at most `MAX_STEERING_RETRIES`
  times per step; after that the response is accepted. The cost
  of every response, rejected or not, is charged. A layer that raises or times out is logged
  and abstains.
- **`before_tool_call(ctx, call)`** sees each tool call the model asked for, one call after
  another in the order the model gave them, before any of them runs, and each call of an
  `invoke_tool` step (its `call_id` is the step id). It returns a
  `ToolCallDecision` (None lets the call through): `override_args` rewrites the arguments for
  the later layers and the tool, and the first `block` refuses the call — the message becomes
  the call's error output, which the model reads (an `invoke_tool` step fails with
  `steering_denied` instead). A layer that raises or times out is logged
  and abstains, unless it sets `on_before_tool_call_error = "deny"`: a permission gate fails
  closed and blocks the call.

Either hook may return `state=` to replace its layer's state. Noetic's own `cancelled` error
always propagates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from noetic.errors import NoeticError
from noetic.items import FunctionCallItem
from noetic.layers.contract import UNSET, ModelCallDecision, ToolCallDecision, ToolCallRequest
from noetic.layers.frame import LayerContext, commit_state, is_cancellation, report, run_hook

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.layers.frame import LayerEntry
    from noetic.model import ModelResponse

__all__ = ["MAX_STEERING_RETRIES", "guard_tool_call", "guard_tool_calls", "judge_response"]

#: Guided retries one model step allows before it accepts the response (the TypeScript limit).
MAX_STEERING_RETRIES = 3


async def judge_response(ctx: Context, response: ModelResponse, step_id: str) -> str | None:
    """The guidance to retry with, or None to accept; raises `steering_denied` on a deny."""
    frame = ctx._layers
    entries = frame.with_hook("after_model_call") if frame is not None else []
    if not entries:
        return None
    assert frame is not None
    guidance: list[str] = []
    guided = False
    for entry in entries:
        decision = await _decide(entry, ctx, response)
        if decision is None:
            continue
        commit_state(entry, ctx, decision.state, "after_model_call")
        if decision.action == "deny":
            await frame.flush()
            reason = decision.message or "the response was refused"
            raise NoeticError(
                "steering_denied",
                f"context layer {entry.id!r} denied the model response: {reason}",
                guidance=decision.message,
                layer_id=entry.id,
                step_id=step_id,
            )
        if decision.action == "guide":
            guided = True
            if decision.message:
                guidance.append(decision.message)
    await frame.flush()
    if not guided:
        return None
    return "\n".join(guidance) or "Please adjust your response."


async def _decide(entry: LayerEntry, ctx: Context, response: ModelResponse) -> ModelCallDecision | None:
    try:
        value = await run_hook(entry, "after_model_call", LayerContext(entry, ctx), response)
        if value is not None and not isinstance(value, ModelCallDecision):
            raise TypeError(f"returned {type(value).__name__}; return a ModelCallDecision or None")
        if value is not None and value.action not in ("allow", "deny", "guide"):
            raise ValueError(f"unknown action {value.action!r}")
    except Exception as exc:
        if is_cancellation(exc):
            raise
        report(entry, "after_model_call", exc)
        return None  # a broken judge abstains
    return value


async def guard_tool_calls(ctx: Context, calls: Sequence[FunctionCallItem]) -> list[FunctionCallItem | str]:
    """Each model-requested call as it should run (arguments maybe rewritten), or the message
    it was blocked with; guarded one call after another, in order."""
    if ctx._layers is None or not ctx._layers.with_hook("before_tool_call"):
        return list(calls)
    guarded: list[FunctionCallItem | str] = []
    for call in calls:
        args = _decode(call.arguments)
        verdict = await guard_tool_call(ctx, ToolCallRequest(call.name, args, call.call_id))
        if isinstance(verdict, str):
            guarded.append(verdict)
        elif verdict.args is args:
            guarded.append(call)
        else:
            encoded = verdict.args if isinstance(verdict.args, str) else json.dumps(verdict.args, default=str)
            guarded.append(call.model_copy(update={"arguments": encoded}))
    return guarded


async def guard_tool_call(ctx: Context, request: ToolCallRequest) -> ToolCallRequest | str:
    """`request` through the `before_tool_call` guards of `ctx`: the request to run (with the
    arguments the guards left) or the message a guard blocked it with."""
    frame = ctx._layers
    entries = frame.with_hook("before_tool_call") if frame is not None else []
    if not entries:
        return request
    assert frame is not None
    try:
        for entry in entries:
            try:
                value = await run_hook(entry, "before_tool_call", LayerContext(entry, ctx), request)
                if value is not None and not isinstance(value, ToolCallDecision):
                    raise TypeError(f"returned {type(value).__name__}; return a ToolCallDecision or None")
            except Exception as exc:
                if is_cancellation(exc):
                    raise
                report(entry, "before_tool_call", exc)
                if getattr(entry.layer, "on_before_tool_call_error", "abstain") == "deny":
                    return f"tool call denied: the guard {entry.id!r} failed ({type(exc).__name__}: {exc})"
                continue
            if value is None:
                continue
            commit_state(entry, ctx, value.state, "before_tool_call")
            if value.block is not None:
                return str(value.block) or f"tool call blocked by {entry.id!r}"
            if value.override_args is not UNSET:
                request = ToolCallRequest(request.name, value.override_args, request.call_id)
        return request
    finally:
        await frame.flush()


def _decode(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
