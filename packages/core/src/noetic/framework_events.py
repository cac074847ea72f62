"""The framework events a plain turn publishes, one builder per event type.

Each builder makes the `StreamEvent` of one `{harness name}:{event}` type from the stream's
prefix (`"{harness name}:"`) and the event's values. The runtime hands a builder and its values
to `TurnStream.deliver_later`, which calls it at once when someone reads the stream and keeps
the pair unbuilt otherwise, so a turn nobody watches never makes the payload dicts. Events that
end a turn, and the rarer ones (replays, decisions, loop rounds, custom items), are built where
they happen (`Execution.emit`).
"""

from __future__ import annotations

from typing import Any

from noetic.streams import StreamEvent

__all__ = [
    "item_appended",
    "model_call_completed",
    "model_call_started",
    "step_completed",
    "step_started",
    "tool_call_completed",
    "tool_call_started",
    "turn_started",
]

#: Builds the named tuple without the Python-level call of its own `__new__`.
_event = tuple.__new__


def turn_started(prefix: str, turn_id: str, thread_id: str, execution_id: str) -> StreamEvent:
    """`{name}:turn_started`."""
    data = {"turn_id": turn_id, "thread_id": thread_id, "execution_id": execution_id}
    return _event(StreamEvent, ("framework", prefix + "turn_started", data))


def item_appended(prefix: str, execution_id: str, item: Any) -> StreamEvent:
    """`{name}:item_appended`: `item` reached the log of the context `execution_id`."""
    return _event(
        StreamEvent, ("framework", prefix + "item_appended", {"item": item, "execution_id": execution_id})
    )


def step_started(prefix: str, step_id: str, kind: str, path: str) -> StreamEvent:
    """`{name}:step_started`."""
    data = {"step_id": step_id, "kind": kind, "path": path}
    return _event(StreamEvent, ("framework", prefix + "step_started", data))


def step_completed(prefix: str, step_id: str, kind: str, path: str) -> StreamEvent:
    """`{name}:step_completed`."""
    data = {"step_id": step_id, "kind": kind, "path": path}
    return _event(StreamEvent, ("framework", prefix + "step_completed", data))


def model_call_started(prefix: str, step_id: str, model_id: str, round_no: int) -> StreamEvent:
    """`{name}:model_call_started` for round `round_no` (from 0) of a model step."""
    data = {"step_id": step_id, "model_id": model_id, "round": round_no}
    return _event(StreamEvent, ("framework", prefix + "model_call_started", data))


def model_call_completed(prefix: str, step_id: str, model_id: str, usage: Any) -> StreamEvent:
    """`{name}:model_call_completed`, with the round's accepted usage."""
    data = {"step_id": step_id, "model_id": model_id, "usage": usage}
    return _event(StreamEvent, ("framework", prefix + "model_call_completed", data))


def tool_call_started(prefix: str, call_id: str, name: str) -> StreamEvent:
    """`{name}:tool_call_started`."""
    return _event(
        StreamEvent, ("framework", prefix + "tool_call_started", {"call_id": call_id, "name": name})
    )


def tool_call_completed(prefix: str, call_id: str, name: str, error: bool) -> StreamEvent:
    """`{name}:tool_call_completed`; `error` tells whether the output is an error output."""
    data = {"call_id": call_id, "name": name, "error": error}
    return _event(StreamEvent, ("framework", prefix + "tool_call_completed", data))
