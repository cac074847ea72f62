"""Idle sessions past the hot set, packed into bytes until their thread is used again (SE-5).

What a finished thread's session keeps between its turns is mostly its history and its last
response: for a short conversation some thirty small objects (pydantic items with their field
dicts and sets, the response, its usage), every one of which the cyclic garbage collector walks
on each full collection for as long as the harness runs. A harness serving many threads would
spend more and more of its time there. So past the `hot_sessions` most recently idle sessions
(`noetic.sessions`), a session is packed: its log's items and its last response become one
`bytes` object, which the collector does not track, and both come back on first use — the log
on its first read or append (any turn of the thread, a storage write, a reader of
`log.items`), the response on `get_agent_response()`. The session keeps its stream, queue and
flags, and its log stays the same `ItemLog` object, so streams, layers, eviction and storage
see nothing of it.

How: most sessions hold only built-in items (messages, tool calls and outputs, reasoning) and a
response of plain values, which `noetic.packed_form` copies into nested tuples of their strings
and numbers, marshalled into bytes: checking and encoding at once, in about 40 % fewer
instructions than pickling them and checking that they would come back. What that form refuses
is pickled instead, behind the check below (of what pickle accepts, only models with private
attributes and values nested deeper than it goes): pickle is the standard library's one
encoder that gives back pydantic models with the fields they set without validating them
again. Either form never leaves the process: it is made here from the session's own objects and
read back only by it, never stored or received. A session whose items or response can be
neither encoded nor pickled (an instance of a class defined inside a function, an open file as
output) simply stays unpacked. Read back, the items and the response are equal copies of the
originals, not the same objects.

Pickle gives back exactly only what it knows how to rebuild: an object with its own
`__reduce__` may come back as something else, an exception loses its `__cause__`, an exception
class whose `__init__` takes other arguments than it passes on does not come back at all, and a
custom item comes back with a copy of its declaration (so `is_custom_item` no longer knows it).
So a session that needs pickle is packed only when it holds nothing else: built-in items whose
extra fields are plain data, and an output that is plain data — strings, numbers, lists and
dicts of them, pydantic models of them. Any other session (a custom item, an exception or an
arbitrary object as output) stays unpacked. Should reading back fail all the same, the session
stays packed — nothing is dropped — and the read raises `SESSION_UNPACK_FAILED`.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from noetic.errors import NoeticError
from noetic.harness import HarnessResponse
from noetic.items import FunctionCallItem, FunctionCallOutputItem, MessageItem, ReasoningItem
from noetic.layers.usage import LazyUsage
from noetic.packed_form import Encoded, Unencodable, decode, encode, pickles_as_a_model

if TYPE_CHECKING:
    from noetic.harness import _Session
    from noetic.items import Item, ItemLog

__all__ = ["PackedSession", "pack"]

#: What a packed session holds, encoded: its items, its response's fields (None: no response)
#: and its layer usage's own figures.
_Parts = tuple[tuple["Item", ...], "dict[str, Any] | None", tuple[Any, ...]]


class PackedSession:
    """A packed session's items and last response (`count` items), encoded; `unpack` (called
    by the log's first read) hands the response back to the session and returns the items.
    `usage_measure` and `usage_shared` are what the response's unread layer usage keeps besides
    its own figures (None when it has none): references to what the harness holds anyway."""

    __slots__ = ("_classes", "_data", "_session", "count", "log", "usage_measure", "usage_shared")

    def __init__(
        self,
        session: _Session,
        data: bytes,
        classes: tuple[type, ...] | None,
        count: int,
        usage: LazyUsage | None,
    ):
        self._session: _Session | None = session
        #: The parts as `noetic.packed_form` encodes them, or pickled (`_classes` None).
        self._data = data
        #: The classes `noetic.packed_form` names beside its bytes; None when pickled.
        self._classes = classes
        self.count = count
        # two references rather than a LazyUsage object of its own per packed session
        self.usage_measure = None if usage is None else usage.measure
        self.usage_shared = None if usage is None else usage.shared
        #: The log the items belong to (reading the session's response unpacks it).
        self.log: ItemLog = session.log

    def unpack(self) -> list[Item]:
        """Decode the items and give the session its response back (once)."""
        session = self._session
        assert session is not None  # a log unpacks once
        data, classes = self._data, self._classes
        try:
            parts: _Parts = pickle.loads(data) if classes is None else decode((data, classes))
            items, fields, usage_own = parts
        except Exception as exc:  # an object's own reduction raises what it likes
            raise NoeticError(
                "SESSION_UNPACK_FAILED",
                f"thread {session.thread_id!r}: its idle session could not be read back "
                f"({type(exc).__name__}: {exc}); it stays as it was",
                thread_id=session.thread_id,
            ) from exc
        self._session = None
        response = None
        if fields is not None:
            if self.usage_measure is not None and self.usage_shared is not None:
                fields["_layer_usage"] = LazyUsage(self.usage_measure, self.usage_shared, usage_own)
            response = HarnessResponse(**fields)
        session.packed = None
        session._last_response = response
        return list(items)


def pack(session: _Session) -> bool:
    """Pack an idle session's log and last response (SE-5); False when they can be neither
    encoded nor pickled (the session is left as it was) or it is packed already."""
    if session.packed is not None:
        return False
    log = session.log
    items = tuple(log.items)
    response: HarnessResponse[Any] | None = session._last_response
    try:
        usage, fields = _response_parts(response)
        parts: _Parts = (items, fields, () if usage is None else usage.own)
        encoded = _encoded(parts)
        if encoded is not None:
            data, classes = encoded
        else:  # something `noetic.packed_form` does not give back exactly
            data, classes = pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL), None
            if not _packable(items, response):
                return False
    except Exception:  # noqa: BLE001 - pickle raises whatever an object's own reduction raises,
        return False  # settling a layer's figures whatever they hold: the session stays unpacked
    packed = PackedSession(session, data, classes, len(items), usage)
    session._last_response = None
    session.packed = packed
    log.pack(packed)
    return True


def _response_parts(response: HarnessResponse[Any] | None) -> tuple[LazyUsage | None, dict[str, Any] | None]:
    """The response's unread layer usage, settled (None when it has none), and the fields it is
    made from but that usage (None: no response)."""
    if response is None:
        return None, None
    usage = response._layer_usage
    names = HarnessResponse._init_fields
    if isinstance(usage, LazyUsage):  # its own figures go with the items, the rest stays
        return usage.settled(), {name: getattr(response, name) for name in names if name != "_layer_usage"}
    return None, {name: getattr(response, name) for name in names}


def _encoded(parts: _Parts) -> Encoded | None:
    """`parts` as `noetic.packed_form` encodes them, or None when it would not give them back
    exactly (custom items, which pickle does not give back either, are left to `_packable`)."""
    if any(type(item) not in _BUILT_IN_ITEMS for item in parts[0]):
        return None
    try:
        return encode(parts)
    except Unencodable:
        return None


#: The item types pickle gives back exactly when their extra fields are plain data (see the module docstring).
_BUILT_IN_ITEMS = (MessageItem, FunctionCallItem, FunctionCallOutputItem, ReasoningItem)
#: How many values `_plain` looks at before it calls a value not plain (and so tries it).
_PLAIN_NODES = 1000


def _packable(items: tuple[Item, ...], response: HarnessResponse[Any] | None) -> bool:
    """Whether pickle gives back exactly what the session holds: built-in items whose extra
    fields are plain data, and an output that is plain data (or pydantic models of it)."""
    if any(_foreign(item) for item in items):
        return False
    return response is None or (response.checkpoint_error is None and _plain(response.output))


def _foreign(item: Item) -> bool:
    """Whether an item may hold what pickle cannot give back: one not of a built-in type, or a
    built-in one with extra fields (its own or its content parts') that are not plain data."""
    if type(item) not in _BUILT_IN_ITEMS:
        return True
    parts = [item, *(getattr(item, "content", None) or ()), *(getattr(item, "summary", None) or ())]
    return not all(_plain(part.__pydantic_extra__ or {}) for part in parts)


def _plain(value: Any) -> bool:
    """True for strings, numbers, booleans, None, and lists, tuples, string-keyed dicts and
    pydantic models of them (at most `_PLAIN_NODES` values): what pickle gives back as it was."""
    stack, seen = [value], 0
    while stack:
        seen += 1
        if seen > _PLAIN_NODES:
            return False
        current = stack.pop()
        kind = type(current)
        if kind in (str, int, float, bool) or current is None:
            continue
        if kind in (list, tuple):
            stack.extend(current)
        elif kind is dict:
            if not all(type(key) is str for key in current):
                return False
            stack.extend(current.values())
        elif isinstance(current, BaseModel) and pickles_as_a_model(kind):
            stack.extend(current.__dict__.values())
            stack.extend((current.__pydantic_extra__ or {}).values())
            stack.extend((current.__pydantic_private__ or {}).values())
        else:
            return False
    return True
