"""Idle sessions past the hot set are packed (SE-5): invisible to every reader of the thread."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.errors import NoeticConfigError
from noetic.items import FunctionCallOutputItem, Item, ItemLog, item_text, user_message
from noetic.layers import CallResult, ContextLayer, LayerContext
from noetic.layers.usage import LazyUsage
from noetic.model import ModelRequest
from noetic.records import Record, set_field
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from noetic.usage_reports import LastLayerUsage
from pydantic import BaseModel, PrivateAttr

pytestmark = pytest.mark.anyio


def _texts(items: Any) -> list[str]:
    return [item_text(item) for item in items if item_text(item)]


def _harness(model: ScriptedModel, **options: Any) -> nt.AgentHarness[Any]:
    return nt.AgentHarness("t", agent_graph=nt.call_model("answer"), model=model, **options)


def _packed(h: nt.AgentHarness[Any]) -> set[str]:
    return {thread_id for thread_id, session in h._sessions._live.items() if session.packed is not None}


async def test_many_threads_then_each_next_turn_sees_its_history() -> None:
    model = ScriptedModel.echo()
    async with _harness(model, hot_sessions=3) as h:
        for i in range(20):
            await h.run(f"hello {i}", thread_id=f"t{i}")
        assert _packed(h) == {f"t{i}" for i in range(17)}  # all but the 3 most recently idle
        for i in range(20):
            response = await h.run(f"again {i}", thread_id=f"t{i}")
            assert _texts(model.calls[-1].items) == [f"hello {i}", f"hello {i}", f"again {i}"]
            assert _texts(response.items) == [f"hello {i}", f"hello {i}", f"again {i}", f"again {i}"]
        assert len(_packed(h)) == 17  # packed again as they fell out of the hot set


async def test_a_packed_threads_response_reads_back_equal() -> None:
    async with _harness(ScriptedModel.echo(), hot_sessions=0) as h:
        first = await h.run("hello", thread_id="a")
        assert _packed(h) == {"a"}
        again = await h.get_agent_response(thread_id="a")
        assert _packed(h) == set()  # reading the response unpacked the session
        for field in ("output", "text", "items", "usage", "cost", "execution_id", "thread_id"):
            assert getattr(again, field) == getattr(first, field)
        assert again.last_layer_usage == first.last_layer_usage
        assert h._sessions._live["a"].log.items[0] is again.items[0]  # the log and response share items


async def test_the_log_object_and_a_view_held_across_packing_stay_live() -> None:
    async with _harness(ScriptedModel.echo(), hot_sessions=1) as h:
        await h.run("hello", thread_id="a")
        log = h._sessions._live["a"].log
        view = log.items
        await h.run("other", thread_id="b")  # a falls out of the hot set
        assert _packed(h) == {"a"}
        assert len(log) == 2 and len(view) == 2  # counted without unpacking
        assert _packed(h) == {"a"}
        assert _texts(view) == ["hello", "hello"]  # the old view unpacks the log
        assert _packed(h) == set()
        await h.run("again", thread_id="a")
        assert h._sessions._live["a"].log is log
        assert _texts(view) == ["hello", "hello", "again", "again"]


async def test_a_packed_session_holds_its_history_as_bytes_only() -> None:
    async with _harness(ScriptedModel.echo(), hot_sessions=0) as h:
        await h.run("hello", thread_id="a")
        session = h._sessions._live["a"]
        assert session.packed is not None
        assert list(session.log._items) == [] and session._last_response is None
        packed = session.packed
        # beside the bytes, only what every turn of the step shares: model id, instructions, tools
        assert packed.usage_shared == ("scripted:echo", None, ())
        reachable = [obj for obj in gc.get_referents(packed) if obj is not packed.usage_shared]
        assert any(isinstance(obj, bytes) for obj in reachable)
        assert not any(isinstance(obj, list | BaseModel) for obj in reachable)
        assert packed._classes == ()  # built-in items only: the tuple form, naming no class


async def test_a_session_that_cannot_be_pickled_stays_unpacked() -> None:
    class Local:  # defined in a function: pickle cannot name it
        pass

    output = Local()
    agent = nt.run_code("local", lambda _input, _ctx: output)
    async with nt.AgentHarness("t", agent_graph=agent, hot_sessions=0) as h:
        await h.run("hello", thread_id="a")
        assert _packed(h) == set()
        assert (await h.get_agent_response(thread_id="a")).output is output


class _Reducing(BaseModel):
    """A model whose own `__reduce__` makes pickle give back something else."""

    a: int = 1

    def __reduce__(self) -> Any:
        return (str, ("NOT A MODEL",))


class _Stated(BaseModel):
    """A model with its own `__getstate__`, inherited by a subclass."""

    a: int = 1

    def __getstate__(self) -> Any:
        return super().__getstate__()


class _StatedChild(_Stated):
    pass


@pytest.mark.parametrize("output", [_Reducing(a=5), _StatedChild(a=2)], ids=["reduce", "getstate-inherited"])
async def test_a_model_with_its_own_pickling_stays_unpacked(output: BaseModel) -> None:
    agent = nt.run_code("model", lambda _input, _ctx: output)
    async with nt.AgentHarness("t", agent_graph=agent, hot_sessions=0) as h:
        await h.run("hello", thread_id="a")
        await h.run("other", thread_id="b")
        assert "a" not in _packed(h)
        assert (await h.get_agent_response(thread_id="a")).output is output


async def test_a_stream_made_before_packing_sees_the_next_turn() -> None:
    async with _harness(ScriptedModel.echo(), hot_sessions=0) as h:
        await h.run("hello", thread_id="a")
        events = h.get_full_stream(thread_id="a")  # made now, read after the packing below
        await h.run("other", thread_id="b")
        assert "a" in _packed(h)
        seen: list[str] = []

        async def watch() -> None:
            async for event in events:
                seen.append(event.type)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await h.run("again", thread_id="a")
        assert seen[0].endswith("turn_started") and seen[-1].endswith("turn_completed")


async def test_packed_threads_are_written_out_on_eviction_and_exit_and_come_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'run.db'}"
    model = ScriptedModel.echo()
    async with _harness(model, storage=url, hot_sessions=1, max_idle_sessions=4) as h:
        for i in range(8):
            await h.run(f"hello {i}", thread_id=f"t{i}")
        await h.wait_background()
        assert set(h._sessions._live) == {"t4", "t5", "t6", "t7"}  # t0..t3 evicted (written out)
        assert _packed(h) == {"t4", "t5", "t6"}
    async with _harness(model, storage=url) as h:  # a new harness reads every history back
        for i in range(8):
            await h.run(f"again {i}", thread_id=f"t{i}")
            assert _texts(model.calls[-1].items) == [f"hello {i}", f"hello {i}", f"again {i}"]


async def test_hot_sessions_none_never_packs_and_the_default_is_a_thousand() -> None:
    async with _harness(ScriptedModel.echo(), hot_sessions=None) as h:
        for i in range(5):
            await h.run(f"hello {i}", thread_id=f"t{i}")
        assert _packed(h) == set()
    assert _harness(ScriptedModel.echo())._sessions.policy.hot == 1000


@pytest.mark.parametrize("hot", [-1, True, 1.5, "auto"])
def test_bad_hot_sessions_are_config_errors(hot: Any) -> None:
    with pytest.raises(NoeticConfigError) as err:
        _harness(ScriptedModel.echo(), hot_sessions=hot)
    assert err.value.code == "SESSION_POLICY_INVALID"
    assert "hot_sessions" in err.value.message
    assert err.value.details["option"] == "hot_sessions"
    assert "hot_sessions=" in (err.value.hint or "")


class _Held:
    """A `PackedItems` that hands back the items it was given."""

    def __init__(self, items: list[Item]):
        self.count = len(items)
        self.items = items
        self.unpacked = 0

    def unpack(self) -> list[Item]:
        self.unpacked += 1
        return self.items


def test_an_item_log_unpacks_once_on_its_first_read_or_append() -> None:
    first = user_message("one")
    for read in (
        lambda log: list(log.items),
        lambda log: log.append(user_message("two")),
        lambda log: first.id in log,
        lambda log: log.items[0],
        lambda log: repr(log.items),
    ):
        log = ItemLog([first])
        held = _Held([first])
        log.pack(held)
        assert len(log) == 1 and held.unpacked == 0
        read(log)
        read(log)
        assert held.unpacked == 1
        assert log.items[0] is first


class _FailsOnce(_Held):
    """A `PackedItems` whose first unpack fails (a decoding error)."""

    def unpack(self) -> list[Item]:
        if self.unpacked == 0:
            self.unpacked += 1
            raise ValueError("truncated")
        return super().unpack()


def test_an_unpack_that_fails_keeps_the_items_packed_for_the_next_read() -> None:
    first = user_message("one")
    log = ItemLog([first])
    log.pack(_FailsOnce([first]))
    with pytest.raises(ValueError):
        list(log.items)
    assert [item.id for item in log.items] == [first.id]  # nothing lost: the next read has them


class _Refuses:
    """An output whose own reduction fails with an error pickle does not know."""

    def __reduce__(self) -> Any:
        raise RuntimeError("not today")


async def test_an_output_whose_reduction_raises_leaves_the_session_unpacked() -> None:
    output = _Refuses()
    agent = nt.run_code("refuses", lambda _input, _ctx: output)
    async with nt.AgentHarness("t", agent_graph=agent, hot_sessions=0) as h:
        await h.run("hello", thread_id="a")
        await h.run("hello", thread_id="b")
        assert _packed(h) == set()
        assert (await h.get_agent_response(thread_id="a")).output is output


# --- the layer usage of a packed response ---------------------------------------------------

_TOOL_NOTE = "adds two whole numbers (described once, on the tool)"
_FIXED_NOTE = "a fixed paragraph every thread is shown"


class _Fixed(ContextLayer):
    """An anchored paragraph, the same for every thread."""

    id = "fixed"
    slot = 100
    placement = "anchor"

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return _FIXED_NOTE


class _Steps(ContextLayer):
    """Thread-scoped state shown live and advanced after every step: each thread's own output."""

    id = "steps"
    slot = 200
    placement = "live"

    async def init(self, ctx: LayerContext) -> dict[str, int]:
        return await ctx.storage.get("state") or {"steps": 0}

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"steps on {ctx.thread_id}: {ctx.state['steps']}"

    async def store(self, ctx: LayerContext, response: CallResult) -> dict[str, int]:
        return {"steps": ctx.state["steps"] + 1}


class _AddArgs(BaseModel):
    a: int
    b: int


def _plays_the_tool_round(request: ModelRequest) -> Any:
    """Calls the tool once per user message, then answers (live layers come after the history)."""
    history = [item for item in request.items if getattr(item, "role", None) != "developer"]
    if isinstance(history[-1], FunctionCallOutputItem):
        return text_reply("5")
    return tool_call_reply("add", {"a": 2, "b": 3})


def _tool_harness(
    layers: list[Any], model: ScriptedModel | None = None, **options: Any
) -> nt.AgentHarness[Any]:
    add = nt.tool("add", description=_TOOL_NOTE, input=_AddArgs, execute=lambda args: args.a + args.b)
    graph = nt.call_model("answer", instructions="be brief", tools=[add])
    model = model or ScriptedModel(default=_plays_the_tool_round)
    return nt.AgentHarness("t", agent_graph=graph, model=model, layers=layers, **options)


def _dumped(usage: LastLayerUsage | None) -> Any:
    """Everything a reader can see of a usage snapshot, the fields it set included."""
    assert usage is not None
    return usage.model_dump(mode="json"), usage.model_dump(mode="json", exclude_unset=True)


@pytest.mark.parametrize(
    "layers", [[], [_Fixed()], [_Fixed(), _Steps()]], ids=["bare", "anchored", "two-layers"]
)
async def test_a_packed_threads_layer_usage_reads_back_equal(layers: list[Any]) -> None:
    async with _tool_harness(layers, hot_sessions=0) as h:
        await h.run("add 2 and 3", thread_id="a")  # a second turn: the history is longer than the turn
        first = await h.run("and again", thread_id="a")
        assert _packed(h) == {"a"}
        assert h._sessions._live["a"].packed._classes is not None  # not pickled: the tuple form
        await h.run("add 2 and 3", thread_id="b")  # another thread's layer outputs beside a's
        again = await h.get_agent_response(thread_id="a")
        assert _packed(h) == {"b"}
        assert again is not first and again == first
        assert again.last_layer_usage == first.last_layer_usage
        assert _dumped(again.last_layer_usage) == _dumped(first.last_layer_usage)
        assert [e.layer_id for e in again.last_layer_usage.layers] == sorted(layer.id for layer in layers)
        assert again.last_layer_usage.history_tokens > 0


async def test_a_layer_usage_read_before_packing_reads_back_equal() -> None:
    async with _tool_harness([_Fixed(), _Steps()], hot_sessions=1) as h:
        first = await h.run("add 2 and 3", thread_id="a")
        usage = first.last_layer_usage  # measured now, before a is packed
        await h.run("add 2 and 3", thread_id="b")
        assert _packed(h) == {"a"}
        assert h._sessions._live["a"].packed._classes is not None  # the snapshot in the tuple form
        again = await h.get_agent_response(thread_id="a")
        assert _dumped(again.last_layer_usage) == _dumped(usage)


async def test_packing_copies_neither_the_tool_definitions_nor_the_layer_items() -> None:
    """The unread layer usage is not pickled: what the harness holds anyway stays beside the
    bytes, only the call's own figures are encoded with the items."""
    async with _tool_harness([_Fixed()], hot_sessions=0) as h:
        first = await h.run("add 2 and 3", thread_id="a")
        packed = h._sessions._live["a"].packed
        assert packed is not None
        assert _TOOL_NOTE.encode() not in packed._data
        assert _FIXED_NOTE.encode() not in packed._data
        again = await h.get_agent_response(thread_id="a")
        usage = again.last_layer_usage
        assert usage is not None and item_text(usage.layers[0].items[0]) == _FIXED_NOTE
        assert _dumped(usage) == _dumped(first.last_layer_usage)


async def test_what_a_packed_session_keeps_beside_its_bytes_pins_no_item_of_its_log() -> None:
    model = ScriptedModel(default=_plays_the_tool_round)
    async with _tool_harness([], model, hot_sessions=0) as h:
        response = await h.run("add 2 and 3", thread_id="a")
        await h.run("add 2 and 3", thread_id="b")
        packed_a, packed_b = h._sessions._live["a"].packed, h._sessions._live["b"].packed
        assert packed_a is not None and packed_b is not None
        assert packed_a.usage_shared is packed_b.usage_shared  # one tuple for every turn of the step
        originals = [weakref.ref(item) for item in response.items]
        del response
        model.calls.clear()  # the requests it recorded hold the items too
        await h.wait_background()  # and so does the turn's execution, until its costs are settled
        gc.collect()
        assert [ref() for ref in originals] == [None] * len(originals)  # only the bytes hold them
        again = await h.get_agent_response(thread_id="a")
        assert again.last_layer_usage is not None and again.last_layer_usage.history_tokens > 0


async def test_a_durable_layered_threads_packed_usage_reads_back_equal(tmp_path: Path) -> None:
    """A durable run measures its usage at once (a finished value): packed as it is."""
    async with _tool_harness(
        [_Fixed(), _Steps()], hot_sessions=0, storage=f"sqlite:///{tmp_path / 'r.db'}"
    ) as h:
        first = await h.run("add 2 and 3", thread_id="a")
        assert _packed(h) == {"a"}
        again = await h.get_agent_response(thread_id="a")
        assert _dumped(again.last_layer_usage) == _dumped(first.last_layer_usage)


async def test_turns_with_their_own_instructions_keep_their_own_usage_when_packed() -> None:
    """The parts a step's turns share are shared only while equal: instructions made per
    thread give each packed thread the system bucket of its own instructions."""
    graph = nt.call_model(
        "answer", instructions=lambda ctx: "be brief. " * (1 + 20 * (ctx.thread_id == "long"))
    )
    async with nt.AgentHarness("t", agent_graph=graph, model=ScriptedModel.echo(), hot_sessions=0) as h:
        short = await h.run("hello", thread_id="short")
        long = await h.run("hello", thread_id="long")
        assert _packed(h) == {"short", "long"}
        short_again = await h.get_agent_response(thread_id="short")
        long_again = await h.get_agent_response(thread_id="long")
        assert _dumped(short_again.last_layer_usage) == _dumped(short.last_layer_usage)
        assert _dumped(long_again.last_layer_usage) == _dumped(long.last_layer_usage)
        assert (
            long_again.last_layer_usage.system_prompt_tokens
            > short_again.last_layer_usage.system_prompt_tokens
        )


async def test_a_layer_usage_that_cannot_be_settled_leaves_the_session_unpacked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuses(self: LazyUsage) -> LazyUsage:
        raise ValueError("cannot convert float NaN to integer")  # a layer's figure gone wrong

    monkeypatch.setattr(LazyUsage, "settled", refuses)
    async with _tool_harness([_Fixed()], hot_sessions=0) as h:
        first = await h.run("add 2 and 3", thread_id="a")
        assert _packed(h) == set()
        assert await h.get_agent_response(thread_id="a") is first


class Rejected(Exception):
    """Pickles, but does not read back: `__init__` takes two arguments, the pickle passes one."""

    def __init__(self, reason: str, code: int):
        super().__init__(reason)
        self.code = code


def _verdict(text: str) -> Rejected:
    return Rejected(f"policy rejected {text!r}", 403)


async def test_an_output_that_does_not_read_back_leaves_the_session_unpacked() -> None:
    model = ScriptedModel.echo()
    graph = nt.sequence("c", [nt.call_model("answer"), nt.run_code("check", _verdict)])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, hot_sessions=0) as h:
        first = await h.run("hello", thread_id="a")
        await h.run("other", thread_id="b")
        assert "a" not in _packed(h)  # it would never have come back
        again = await h.get_agent_response(thread_id="a")
        assert again is not None and again.output is first.output
        await h.run("again", thread_id="a")
        assert _texts(model.calls[-1].items) == ["hello", "hello", "again"]


def _extension_item() -> Any:
    from noetic.items import ExtensionItem

    return ExtensionItem(type="acme:verdict", data={}, verdict=Rejected("no", 403))


def _message_with_extra_field() -> Any:
    from noetic.items import MessageItem

    return MessageItem(role="assistant", content="noted", verdict=Rejected("no", 403))


@pytest.mark.parametrize(
    ("make_item", "texts"),
    [
        (_extension_item, ["hello", "hello", "again"]),
        (_message_with_extra_field, ["hello", "hello", "noted", "again"]),
    ],
    ids=["extension item", "built-in item with an extra field"],
)
async def test_an_item_that_does_not_read_back_leaves_the_session_unpacked(
    make_item: Callable[[], Any], texts: list[str]
) -> None:
    def note(text: str, ctx: nt.Context) -> str:
        ctx.item_log.append(make_item())
        return text

    model = ScriptedModel.echo()
    graph = nt.sequence("c", [nt.call_model("answer"), nt.run_code("note", note)])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, hot_sessions=0) as h:
        await h.run("hello", thread_id="a")
        await h.run("other", thread_id="b")
        assert "a" not in _packed(h)
        await h.run("again", thread_id="a")
        assert _texts(model.calls[-1].items) == texts


async def test_a_session_that_fails_to_read_back_stays_packed_and_says_so() -> None:
    async with _harness(ScriptedModel.echo(), hot_sessions=0) as h:
        first = await h.run("hello", thread_id="a")
        await h.run("other", thread_id="b")
        session = h._sessions._live["a"]
        assert session.packed is not None
        data, session.packed._data = session.packed._data, b"not a pickle"  # as a failed read leaves it
        for _ in range(2):  # every read says so, and nothing is dropped meanwhile
            with pytest.raises(nt.NoeticError) as caught:
                await h.get_agent_response(thread_id="a")
            assert caught.value.code == "SESSION_UNPACK_FAILED"
            assert "thread 'a'" in caught.value.message and "a" in _packed(h)
        session.packed._data = data
        again = await h.get_agent_response(thread_id="a")
        assert again is not None and again.items == first.items and "a" not in _packed(h)


class _Cause(Exception):
    """An output pickle would give back without its `__cause__`."""


def _caused(text: str) -> Exception:
    try:
        raise _Cause("outer") from KeyError("inner")
    except _Cause as exc:
        return exc


async def test_an_output_pickle_would_change_leaves_the_session_unpacked() -> None:
    graph = nt.sequence("c", [nt.call_model("answer"), nt.run_code("cause", _caused)])
    async with nt.AgentHarness("t", agent_graph=graph, model=ScriptedModel.echo(), hot_sessions=0) as h:
        first = await h.run("hello", thread_id="a")
        await h.run("other", thread_id="b")
        assert "a" not in _packed(h)
        again = await h.get_agent_response(thread_id="a")
        assert again is not None and again.output is first.output
        assert isinstance(again.output.__cause__, KeyError)


class Progress(BaseModel):
    """A custom item's output (module level: pickle would find it)."""

    done: int


PROGRESS = nt.custom_item("files:progress", event=Progress, output=Progress)


async def test_a_thread_with_a_custom_item_stays_unpacked_and_its_item_recognised() -> None:
    def process(files: list[str]) -> Any:
        for done, _ in enumerate(files, start=1):
            yield {"done": done}
        return len(files)

    step = nt.run_code(
        "process",
        process,
        custom_items={"progress": PROGRESS},
        emit_items={"item": "progress", "on_done": lambda count: {"done": count}},
    )
    async with nt.AgentHarness("t", agent_graph=step, hot_sessions=0) as h:
        await h.run(["a.csv", "b.csv"], thread_id="a")
        await h.run(["x"], thread_id="b")
        assert "a" not in _packed(h)
        again = await h.get_agent_response(thread_id="a")
        assert again is not None
        (item,) = [item for item in again.items if item.type == "files:progress"]
        assert nt.is_custom_item(item, PROGRESS) and item.output == Progress(done=2)


class Verdict(BaseModel):
    """A structured output (module level: pickle would find it)."""

    ok: bool
    notes: list[str] = []


class Sealed(Verdict):
    """A structured output with a private attribute set: `noetic.packed_form` leaves it to pickle."""

    _reviewer: str = PrivateAttr(default="")


def _sealed(text: str) -> Sealed:
    sealed = Sealed(ok=True)
    sealed._reviewer = f"reviewed {text}"
    return sealed


class Cached(Verdict):
    """A private attribute without a default, never set: `__pydantic_private__` is `{}`."""

    _cache: dict[str, int] = PrivateAttr()


@pytest.mark.parametrize(
    ("output", "classes"),
    [
        (lambda text: Verdict(ok=True, notes=[text]), (Verdict,)),
        (_sealed, None),  # pickled: None
        (lambda text: Cached(ok=True, notes=[text]), None),
    ],
    ids=["encoded", "pickled", "private-unset"],
)
async def test_a_structured_output_packs_and_reads_back_equal_either_way(
    output: Callable[[str], BaseModel], classes: tuple[type, ...] | None
) -> None:
    graph = nt.sequence("c", [nt.call_model("answer"), nt.run_code("judge", output)])
    async with nt.AgentHarness("t", agent_graph=graph, model=ScriptedModel.echo(), hot_sessions=0) as h:
        first = await h.run("hello", thread_id="a")
        session = h._sessions._live["a"]
        assert session.packed is not None and session.packed._classes == classes
        again = await h.get_agent_response(thread_id="a")
        assert again is not None and again.output == first.output and again.output is not first.output
        assert type(again.output) is type(first.output)
        assert again.output.__pydantic_private__ == first.output.__pydantic_private__
        assert again.items == first.items and again.items[0] is session.log.items[0]


class Trimmed(Record):
    """A user's record whose constructor changes what it is given (rebuilt from its fields, it
    would not come back as it was once a field is set after construction)."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        set_field(self, "name", name.strip())


async def test_a_users_record_as_the_output_stays_unpacked_and_reads_back_as_it_was() -> None:
    record = Trimmed("x")
    record.name = "  spaced  "
    graph = nt.run_code("v", lambda _input, _ctx: record)
    async with nt.AgentHarness("t", agent_graph=graph, hot_sessions=0) as h:
        await h.run("x", thread_id="a")
        assert h._sessions._live["a"].packed is None
        again = await h.get_agent_response(thread_id="a")
        assert again is not None and again.output.name == "  spaced  "
