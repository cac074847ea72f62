"""Item-stream snapshots at a cost per delta that does not grow with the text (issue 17, target 5).

Each in-progress snapshot shares the message's deltas and joins its text only when read
(ST-1), yet behaves as the `MessageItem` it stands for, and an old snapshot keeps its own text.
A model step lets the consumers run every `DELTA_BATCH` deltas (ST-2).
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import AsyncIterator
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import FunctionCallItem, Item, MessageItem, OutputText, dump_item, parse_item
from noetic.model import AbortSignal, ModelEvent, ModelRequest, ModelResponse, TextDelta
from noetic.snapshots import MessageSnapshot, TextSoFar
from noetic.streams import DELTA_BATCH
from noetic.testing import ScriptedModel, text_reply
from pydantic import BaseModel, TypeAdapter


def _eager(item_id: str, text: str) -> MessageItem:
    return MessageItem(id=item_id, status="in_progress", role="assistant", content=[OutputText(text=text)])


def _snapshots(*deltas: str) -> list[MessageItem]:
    text = TextSoFar("msg_1")
    return [text.add(delta) for delta in deltas]


# --- the snapshot object ---------------------------------------------------------------------


def test_a_snapshot_is_a_message_item_whose_text_is_joined_on_first_read() -> None:
    first, second = _snapshots("Hel", "lo")
    assert isinstance(first, MessageItem) and type(first) is MessageSnapshot
    assert not isinstance(first, FunctionCallItem)
    # cheap fields are read without joining the text
    assert (first.id, first.status, first.type, first.role, first.is_complete) == (
        "msg_1",
        "in_progress",
        "message",
        "assistant",
        False,
    )
    assert type(first) is MessageSnapshot
    assert second.text == "Hello"
    assert type(second) is MessageItem  # materialised in place: a plain item from now on
    assert first.content == [OutputText(text="Hel")]


def test_an_old_snapshot_keeps_its_own_text_after_later_deltas() -> None:
    snapshots = _snapshots(*(f"{i}," for i in range(50)))
    # read from the last to the first: every one still shows the text as it stood
    for i in reversed(range(50)):
        assert snapshots[i].text == "".join(f"{k}," for k in range(i + 1))


@pytest.mark.parametrize(
    "read",
    [
        lambda s: s.model_dump(),
        lambda s: s.model_dump_json(),
        dump_item,
        repr,
        str,
        vars,
        lambda s: s.model_fields_set,
        lambda s: s.model_extra,
        lambda s: TypeAdapter(list[Item]).dump_python([s], mode="json"),
        lambda s: TypeAdapter(Any).dump_json(s),
        lambda s: copy.copy(s).model_dump(),
        lambda s: copy.deepcopy(s).model_dump(),
        lambda s: pickle.loads(pickle.dumps(s)).model_dump(),
        lambda s: s.model_copy(update={"status": "completed"}).model_dump(),
        lambda s: list(s),
    ],
)
def test_a_snapshot_reads_like_the_eager_item_through_pydantic(read: Any) -> None:
    """Serialisation, copy, pickle, repr and the bookkeeping see the joined text."""
    lazy = _snapshots("ab", "cd", "ef")[1]
    assert read(lazy) == read(_eager("msg_1", "abcd"))


def test_a_snapshot_compares_equal_to_the_eager_item_both_ways() -> None:
    lazy_a, lazy_b = _snapshots("ab", "cd")[1], _snapshots("ab", "cd")[1]
    assert lazy_a == _eager("msg_1", "abcd")
    assert _eager("msg_1", "abcd") == lazy_b
    assert _snapshots("ab", "cd")[0] != _eager("msg_1", "abcd")


def test_a_snapshot_nested_in_a_model_or_validated_as_an_item_keeps_its_text() -> None:
    class Holder(BaseModel):
        item: MessageItem
        items: list[Item] = []

    one, two = _snapshots("ab", "cd")
    holder = Holder(item=one, items=[two])
    assert holder.model_dump(mode="json") == {
        "item": dump_item(_eager("msg_1", "ab")),
        "items": [dump_item(_eager("msg_1", "abcd"))],
    }
    three = _snapshots("x", "y")[1]
    assert parse_item(three).text == "xy"
    assert TypeAdapter(Item).validate_python(_snapshots("x", "y")[0]).text == "x"


def test_a_snapshot_is_frozen_like_a_message_item() -> None:
    snapshot = _snapshots("ab")[0]
    with pytest.raises(Exception, match="frozen"):
        snapshot.status = "completed"  # type: ignore[misc]
    assert snapshot.text == "ab"


# --- through the harness ---------------------------------------------------------------------


async def _item_stream(h: nt.AgentHarness[Any], prompt: str) -> list[Item]:
    seen: list[Item] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            async for item in h.get_item_stream():
                seen.append(item)

        tg.start_soon(watch)
        await h.run(prompt)
    return seen


@pytest.mark.anyio
async def test_item_stream_snapshots_kept_by_a_consumer_show_each_step() -> None:
    """Old snapshots are values: read after the turn, each shows the text as it stood."""
    text = "".join(f"{i:04d}" for i in range(500))
    model = ScriptedModel([text_reply(text)], delta_size=4)
    with anyio.fail_after(10):
        async with nt.AgentHarness("s", agent_graph=nt.call_model("m"), model=model) as h:
            seen = await _item_stream(h, "hi")
    partial = [i for i in seen if isinstance(i, MessageItem) and not i.is_complete]
    assert len(partial) == 500
    assert all(type(i) is MessageSnapshot for i in partial)  # nothing read them yet
    assert [i.text for i in partial] == [text[: 4 * (k + 1)] for k in range(500)]
    final = seen[-1]
    assert isinstance(final, MessageItem) and final.is_complete and final.text == text
    assert final.id == partial[0].id


@pytest.mark.anyio
async def test_item_stream_text_is_right_at_200000_deltas() -> None:
    chunks = [f"{i:05d}"[-4:] for i in range(200_000)]
    text = "".join(chunks)
    model = ScriptedModel([text_reply(text)], delta_size=4)
    with anyio.fail_after(120):
        async with nt.AgentHarness("s", agent_graph=nt.call_model("m"), model=model) as h:
            async with h.stream("go") as turn:
                partial: list[MessageItem] = []
                async for item in turn.items():
                    if isinstance(item, MessageItem) and not item.is_complete:
                        partial.append(item)
            assert turn.response.text == text
    assert len(partial) == 200_000
    for k in (0, 1, 99_999, 150_000, 199_999):
        assert partial[k].text == text[: 4 * (k + 1)]


class _PausingModel:
    """Streams `before` deltas, waits for `resume`, then streams `after` more."""

    model_id = "pausing"

    def __init__(self, before: int, after: int) -> None:
        self.before, self.after = before, after
        self.paused = anyio.Event()
        self.resume = anyio.Event()

    async def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        for i in range(self.before):
            yield TextDelta(f"{i},", "msg_p")
        self.paused.set()
        await self.resume.wait()
        for i in range(self.before, self.before + self.after):
            yield TextDelta(f"{i},", "msg_p")
        text = "".join(f"{i}," for i in range(self.before + self.after))
        message = MessageItem(id="msg_p", role="assistant", content=[OutputText(text=text)])
        yield ModelResponse(items=(message,))


@pytest.mark.anyio
async def test_a_subscriber_that_joins_mid_answer_gets_the_whole_text_so_far() -> None:
    """A late item-stream subscriber replays the buffered deltas: its snapshots start at the
    first delta, not at the one it joined on."""
    model = _PausingModel(before=300, after=200)
    expected = [(("".join(f"{i}," for i in range(k + 1))), False) for k in range(500)]
    with anyio.fail_after(10):
        async with nt.AgentHarness("s", agent_graph=nt.call_model("m"), model=model) as h:
            await h.execute("hi")
            await model.paused.wait()
            late: list[Item] = []
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    async for item in h.get_item_stream():
                        late.append(item)

                tg.start_soon(watch)
                await anyio.sleep(0.01)
                model.resume.set()
            await h.get_agent_response()
    partial = [(i.text, i.is_complete) for i in late if isinstance(i, MessageItem) and i.id == "msg_p"]
    assert partial[:-1] == expected
    assert partial[-1] == (expected[-1][0], True)


class _BurstModel:
    """An in-memory model that never suspends between deltas; counts what it has produced."""

    model_id = "burst"

    def __init__(self, deltas: int) -> None:
        self.deltas = deltas
        self.produced = 0

    async def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        for _ in range(self.deltas):
            self.produced += 1
            yield TextDelta("ab", "msg_b")
        message = MessageItem(id="msg_b", role="assistant", content=[OutputText(text="ab" * self.deltas)])
        yield ModelResponse(items=(message,))


@pytest.mark.anyio
async def test_a_model_that_never_suspends_still_lets_subscribers_read_as_it_streams() -> None:
    """ST-2: the step yields every DELTA_BATCH deltas, so a consumer reads the first deltas
    long before the stream ends and never holds more than two batches unread (a scheduler
    may run the model again before the consumer)."""
    model = _BurstModel(deltas=5 * DELTA_BATCH)
    lag: list[int] = []
    with anyio.fail_after(10):
        async with nt.AgentHarness("s", agent_graph=nt.call_model("m"), model=model) as h:
            async with h.stream("go") as turn:
                async for event in turn:
                    if event.source == "sdk":
                        lag.append(model.produced - len(lag) - 1)
            assert turn.response.text == "ab" * 5 * DELTA_BATCH
    assert len(lag) == 5 * DELTA_BATCH
    assert max(lag) < 2 * DELTA_BATCH
    assert lag[0] < 2 * DELTA_BATCH  # the first delta was read before the stream ran to its end
