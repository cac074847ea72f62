"""What a step saw when it ran: the hash its ledger entry is replayed against (RS-19).

A recorded result is only valid for the input it was computed from. When a step completes,
its entry keeps `input_hash`: a BLAKE2b digest of the step's input (as JSON) and of the
position of the context's item log at dispatch (its length and the id of its last item —
every item keeps its id when it is replayed, and an item made by a step that ran again has a
new one). On resume a step replays only when the hash it would be recorded under now is the
one its entry holds; otherwise the entry and everything recorded beneath it are discarded and
the step runs again. The steps after it then see a new input or a new log position in turn,
so everything that depends on a re-run step runs again too — a resume never mixes results
computed from an old value with a new one.

An input JSON cannot carry (an arbitrary object) gets a hash no later attempt can reproduce:
the step always runs again rather than trust a result nobody can check. `ctx.state` is not
part of the hash (the snapshot restores the state as it was at the crash, not as each step
saw it).
"""

from __future__ import annotations

import json
import os
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from noetic.execution_context import Context

__all__ = ["input_hash"]


class _Unhashable(Exception):
    pass


def input_hash(input: Any, ctx: Context) -> str:
    """The hash of `input` and of `ctx`'s item log position (see the module docstring)."""
    items = ctx.item_log.items
    position = f"{len(items)}:{items[-1].id if items else ''}\n"
    digest = blake2b(position.encode(), digest_size=16)
    try:
        text = _ENCODER.encode(input)
    except (_Unhashable, TypeError, ValueError, RecursionError):
        text = f"unhashable:{os.urandom(16).hex()}"  # never equal: the step runs again
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _plain(value: Any) -> Any:
    """JSON for the values steps pass on besides JSON itself: models and sets."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return sorted(repr(v) for v in value)
    raise _Unhashable


#: `json.dumps(..., separators=(",", ":"), default=_plain)` built once (`json.dumps` with
#: options builds a new encoder per call); the same text, so recorded hashes still match.
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_plain)
