"""In-progress message snapshots of the item stream, at a cost per delta that does not grow.

Each text delta of a streaming assistant message yields a snapshot of the message so far
(HA-5): a `MessageItem` with `status="in_progress"` whose text is everything streamed up to
that delta. A snapshot is a value: one kept by a consumer still shows its own text after later
deltas arrive. Built eagerly, snapshot k would copy the k deltas before it into a new string,
so a long answer would cost O(length) per delta and O(length²) in all (at 200,000 deltas each
snapshot copied about 400 KB).

Python strings cannot share storage, and no library offers a pydantic model whose field is
computed on first read, so this module writes that by hand (ST-1). All snapshots of one message
share one append-only list of its deltas (`TextSoFar`); a snapshot records how many of them it
covers, which is all it needs to stay unchanged when the list grows. Making a snapshot is
O(1); its text is joined the first time its `content` (or `text`), its `__dict__` (which
pydantic's serialisation, repr and copy read) or its pydantic bookkeeping is read — data
descriptors on `MessageSnapshot` catch those, while `id`, `status`, `type`, `role` and
`is_complete` are plain reads of the instance dict. That first read turns the object into a plain `MessageItem` in place
(the `__class__` swap `importlib.util.LazyLoader` uses for lazy modules), so from then on it is
indistinguishable from one built eagerly: pydantic validation, `model_dump`, equality, copy and
pickle all see the materialised fields. Reading the text of every snapshot still copies the
text each time (a new string per snapshot is what a consumer asks for then); reading only
`is_complete` and the final item's text, as a chat UI does, costs O(1) per delta.
"""

from __future__ import annotations

from typing import Any, SupportsIndex

from pydantic import BaseModel

from noetic.items import MessageItem, OutputText

__all__ = ["MessageSnapshot", "TextSoFar"]

_new = object.__new__
_get = object.__getattribute__
_set = object.__setattr__
#: The instance-dict descriptor every pydantic model uses (BaseModel declares the slot).
_DICT = BaseModel.__dict__["__dict__"]


def _materialise(snapshot: MessageItem) -> None:
    """Join the snapshot's text and turn it into a plain `MessageItem` in place."""
    fields = _DICT.__get__(snapshot)
    pending = fields.get("content")
    _set(snapshot, "__class__", MessageItem)
    if type(pending) is tuple:  # (the message's deltas, how many of them are this snapshot's)
        parts, count = pending
        fields["content"] = [OutputText(text="".join(parts if count == len(parts) else parts[:count]))]
        _set(snapshot, "__pydantic_fields_set__", {"id", "status", "role", "content"})
        _set(snapshot, "__pydantic_extra__", {})
        _set(snapshot, "__pydantic_private__", None)


class _Joined:
    """A data descriptor on `MessageSnapshot` for one attribute whose reading (or writing,
    as `copy` and `pickle` do) needs the whole message: it materialises the snapshot first."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, snapshot: MessageItem | None, owner: type | None = None) -> Any:
        if snapshot is None:
            return self
        _materialise(snapshot)
        return _get(snapshot, self.name)

    def __set__(self, snapshot: MessageItem, value: Any) -> None:
        _materialise(snapshot)
        _set(snapshot, self.name, value)


class MessageSnapshot(MessageItem):
    """An in-progress assistant message whose text is joined on first read (see the module).

    It is a `MessageItem` (isinstance holds); reading its `content` (or `text`), its `__dict__`
    (pydantic's serialisation, equality, copy, repr) or its pydantic bookkeeping turns it into
    a plain `MessageItem` in place. `id`, `status`, `type`, `role` and `is_complete` are read
    as they are, at no cost.
    """

    __slots__ = ()  # the same layout as MessageItem, so the `__class__` swap is allowed
    __dict__ = _Joined("__dict__")
    __pydantic_fields_set__ = _Joined("__pydantic_fields_set__")
    __pydantic_extra__ = _Joined("__pydantic_extra__")
    __pydantic_private__ = _Joined("__pydantic_private__")

    def __repr_name__(self) -> str:
        return "MessageItem"  # what the repr shows once it has read the fields

    def __eq__(self, other: object) -> bool:
        _materialise(self)  # pydantic compares classes first: compare as the MessageItem
        return self == other

    __hash__ = MessageItem.__hash__  # (defining __eq__ would remove it)

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        _materialise(self)  # pickle records the class before it reads the state
        return self.__reduce_ex__(protocol)


# Set after the class is made: pydantic refuses a non-annotated attribute that shadows a field.
MessageSnapshot.content = _Joined("content")  # type: ignore[assignment]


class TextSoFar:
    """The deltas of one streaming assistant message; `add` returns the snapshot after each."""

    __slots__ = ("_item_id", "_parts")

    def __init__(self, item_id: str) -> None:
        self._item_id = item_id
        self._parts: list[str] = []

    def add(self, text: str) -> MessageItem:
        """Append one delta and return the message as it stands (O(1): nothing is copied)."""
        parts = self._parts
        parts.append(text)
        snapshot = _new(MessageSnapshot)
        _DICT.__set__(
            snapshot,
            {
                "id": self._item_id,
                "status": "in_progress",
                "type": "message",
                "role": "assistant",
                "content": (parts, len(parts)),
            },
        )
        return snapshot
