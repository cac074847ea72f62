"""Custom items: declaration, dispatch, validation, streaming (CI-1..CI-8, CI-10, CI-13, CI-15)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.custom_items import CustomItem
from noetic.items import ExtensionItem, MessageItem, dump_item
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class ProgressEvent(BaseModel):
    done: int


class Progress(BaseModel):
    done: int
    of: int


progress = nt.custom_item(
    "myapp:progress", description="How far a batch job has got.", event=ProgressEvent, output=Progress
)


async def run_collecting(
    graph: nt.Step, input: Any = "", **harness: Any
) -> tuple[nt.HarnessResponse, list[Any], list[nt.StreamEvent]]:
    """Run one turn, collecting the item stream and the full stream."""
    items: list[Any] = []
    events: list[nt.StreamEvent] = []
    async with nt.AgentHarness("jobs", agent_graph=graph, **harness) as h:

        async def items_task() -> None:
            async for item in h.get_item_stream():
                items.append(item)

        async def events_task() -> None:
            async for event in h.get_full_stream():
                events.append(event)

        async with anyio.create_task_group() as tg:
            tg.start_soon(items_task)
            tg.start_soon(events_task)
            await anyio.wait_all_tasks_blocked()
            response = await h.run(input)
    return response, items, events


def crawl_step() -> nt.Step:
    async def crawl(urls: list[str]) -> AsyncIterator[Any]:
        for i in range(len(urls)):
            yield {"done": i + 1}
        yield nt.Return(len(urls))

    return nt.run_code(
        "crawl",
        crawl,
        custom_items={"progress": progress},
        emit_items={"item": "progress", "on_done": lambda pages: {"done": pages, "of": pages}},
    )


def test_ci_1_type_must_be_prefix_colon_name() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.custom_item("progress", output=Progress)
    assert err.value.code == "INVALID_CUSTOM_ITEM_TYPE" and "myapp:progress" in err.value.hint


def test_ci_2_output_must_be_an_object_without_id_or_type() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.custom_item("a:b", output={"type": "string"})
    assert err.value.code == "INVALID_CUSTOM_ITEM_OUTPUT"
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.custom_item("a:b", output={"type": "object", "properties": {"id": {"type": "string"}}})
    assert "id" in err.value.message
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.custom_item("a:b", output={"type": "object", "properties": {"type": {"type": "string"}}})
    assert "type" in err.value.message
    with pytest.raises(nt.NoeticConfigError):
        nt.custom_item("a:b", output={"type": "object", "properties": {"x": {"type": 5}}})


async def test_ci_5_seed_crawl_streams_three_events_and_one_final_item_sharing_one_id() -> None:
    response, items, events = await run_collecting(crawl_step(), ["a", "b", "c"])
    snapshots = [i for i in items if nt.is_custom_item(i, progress)]
    assert [s.event.done for s in snapshots if not s.is_complete] == [1, 2, 3]  # type: ignore[union-attr]
    final = snapshots[-1]
    assert final.is_complete and final.done == 3 and final.of == 3  # type: ignore[attr-defined]
    assert final.output == Progress(done=3, of=3)
    assert len({s.id for s in snapshots}) == 1
    logged = [i for i in response.items if isinstance(i, CustomItem)]
    assert len(logged) == 1 and logged[0].id == final.id
    assert dump_item(logged[0]) == {"id": final.id, "type": "myapp:progress", "done": 3, "of": 3}
    custom_events = [e for e in events if nt.is_custom_item_event(e, progress)]
    assert [e.data.event.done for e in custom_events] == [1, 2, 3]
    assert all(e.type == "jobs:custom_item_event" and e.data.id == final.id for e in custom_events)


async def test_ci_4_hooks_of_every_shape_and_sync_generator_bodies() -> None:
    def start(urls: list[str]) -> Iterator[dict[str, int]]:
        yield {"done": 0}

    async def done(count: int, ctx: nt.Context) -> AsyncIterator[Any]:
        yield {"done": count}
        yield nt.Return({"done": count, "of": count})

    def body(urls: list[str]) -> Iterator[dict[str, int]]:
        yield {"done": 1}
        return len(urls)

    step = nt.run_code(
        "b",
        body,
        custom_items={"progress": progress},
        emit_items={"item": "progress", "on_start": start, "on_done": done},
    )
    response, items, _ = await run_collecting(step, ["x", "y"])
    snaps = [i for i in items if nt.is_custom_item(i, progress)]
    assert [s.event.done for s in snaps if not s.is_complete] == [0, 1, 2]  # type: ignore[union-attr]
    assert snaps[-1].output == Progress(done=2, of=2) and response.output == 2


def bad_event_body(urls: list[str]) -> Iterator[dict[str, str]]:
    yield {"done": "x"}


@pytest.mark.parametrize(
    ("body", "on_done", "field"),
    [
        (bad_event_body, lambda n: {"done": 1, "of": 1}, "done"),
        (lambda urls: 1, lambda n: {"done": n}, "of"),
    ],
)
async def test_ci_6_a_mismatching_event_or_final_fails_the_step(body: Any, on_done: Any, field: str) -> None:
    step = nt.run_code(
        "bad", body, custom_items={"progress": progress}, emit_items={"item": "progress", "on_done": on_done}
    )
    async with nt.AgentHarness("h", agent_graph=step) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.run(["u"])
    assert err.value.code == "INVALID_CUSTOM_ITEM"
    assert err.value.item == "progress" and err.value.field == field and err.value.expected


async def test_ci_6_json_schema_declarations_validate_too() -> None:
    decl = nt.custom_item(
        "app:hit",
        event={"type": "object", "required": ["url"]},
        output={"type": "object", "required": ["count"], "properties": {"count": {"type": "integer"}}},
    )

    def body(_: Any) -> Iterator[dict[str, Any]]:
        yield {"url": "https://example.org"}
        return 1

    ok = nt.run_code(
        "ok", body, custom_items={"hit": decl}, emit_items={"item": "hit", "on_done": lambda n: {"count": n}}
    )
    response, items, _ = await run_collecting(ok)
    assert [i.event for i in items if nt.is_custom_item(i, decl) and not i.is_complete] == [
        {"url": "https://example.org"}
    ]
    assert [i.count for i in response.items if isinstance(i, CustomItem)] == [1]  # type: ignore[attr-defined]
    bad = nt.run_code(
        "bad",
        body,
        custom_items={"hit": decl},
        emit_items={"item": "hit", "on_done": lambda n: {"count": "1"}},
    )
    async with nt.AgentHarness("h", agent_graph=bad) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.run("")
    assert err.value.code == "INVALID_CUSTOM_ITEM" and err.value.field == "count"


async def test_ci_7_a_dispatch_without_final_fields_is_stream_only() -> None:
    def body(_: Any) -> Iterator[dict[str, int]]:
        yield {"done": 1}
        return "no final"

    step = nt.run_code("s", body, custom_items={"progress": progress}, emit_items={"item": "progress"})
    response, items, _ = await run_collecting(step)
    assert [i.is_complete for i in items if nt.is_custom_item(i, progress)] == [False]
    assert not any(isinstance(i, CustomItem) for i in response.items)


async def test_ci_7_at_most_one_final_item_per_dispatch() -> None:
    step = nt.run_code(
        "s",
        lambda _: 1,
        custom_items={"progress": progress},
        emit_items={
            "item": "progress",
            "on_start": lambda _: {"done": 0, "of": 1},
            "on_done": lambda _: {"done": 1, "of": 1},
        },
    )
    async with nt.AgentHarness("h", agent_graph=step) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.run("")
    assert err.value.code == "INVALID_CUSTOM_ITEM" and "second final" in err.value.message


async def test_ci_8_emit_items_true_emits_the_output_itself() -> None:
    as_message = nt.run_code("m", lambda _: "hi", emit_items=True)
    response, _, _ = await run_collecting(as_message)
    assert [(i.role, i.text) for i in response.items if isinstance(i, MessageItem)] == [("assistant", "hi")]
    as_item = nt.run_code(
        "i",
        lambda _: {"type": "myapp:progress", "done": 1, "of": 1},
        custom_items={"progress": progress},
        emit_items=True,
    )
    response, _, _ = await run_collecting(as_item)
    finals = [i for i in response.items if nt.is_custom_item(i, progress)]
    assert len(finals) == 1 and finals[0].output == Progress(done=1, of=1)


async def test_ci_10_each_loop_iteration_is_its_own_dispatch() -> None:
    body = nt.run_code(
        "tick",
        lambda n: n - 1,
        custom_items={"progress": progress},
        emit_items={"item": "progress", "on_done": lambda n: {"done": 3 - n, "of": 3}},
    )
    graph = nt.loop("drain", body, until=nt.until.output_equals(0))
    response, _, _ = await run_collecting(graph, 3)
    finals = [i for i in response.items if nt.is_custom_item(i, progress)]
    assert [f.done for f in finals] == [1, 2, 3]  # type: ignore[attr-defined]
    assert len({f.id for f in finals}) == 3


async def test_ci_13_is_custom_item_keys_on_the_declaration_not_the_type() -> None:
    same_type = nt.custom_item("openrouter:web_search", output={"type": "object"})
    server_item = ExtensionItem(type="openrouter:web_search", data={"query": "x"})
    assert not nt.is_custom_item(server_item, same_type)
    other = nt.custom_item("myapp:progress", output=Progress)
    response, _, _ = await run_collecting(crawl_step(), ["a"])
    final = next(i for i in response.items if isinstance(i, CustomItem))
    assert nt.is_custom_item(final, progress) and not nt.is_custom_item(final, other)


async def test_ci_4_unknown_item_names_fail_and_registered_items_resolve() -> None:
    step = nt.run_code(
        "s", lambda _: 1, emit_items={"item": "nope", "on_done": lambda _: {"done": 1, "of": 1}}
    )
    async with nt.AgentHarness("h", agent_graph=step) as h:
        with pytest.raises(nt.NoeticConfigError) as err:
            await h.run("")
    assert err.value.code == "UNKNOWN_CUSTOM_ITEM"

    class Items:
        @nt.hookimpl
        def register_custom_items(self, register: Any) -> None:
            register("progress", progress)

    from noetic.plugins import make_plugin_manager

    registered = nt.run_code(
        "s", lambda _: 1, emit_items={"item": "progress", "on_done": lambda _: {"done": 1, "of": 1}}
    )
    pm = make_plugin_manager(load_entry_points=False, plugins=[Items()])
    async with nt.AgentHarness("h", agent_graph=registered, plugins=pm) as h:
        response = await h.run("")
    assert [i.of for i in response.items if nt.is_custom_item(i, progress)] == [1]  # type: ignore[attr-defined]


def test_emit_items_shape_is_checked_at_construction() -> None:
    with pytest.raises(nt.NoeticConfigError):
        nt.run_code("s", lambda _: 1, emit_items={"on_done": lambda _: {}})
    with pytest.raises(nt.NoeticConfigError):
        nt.run_code("s", lambda _: 1, emit_items={"item": "p", "on_finish": lambda _: {}})


async def test_ci_15_a_graph_without_custom_items_streams_only_standard_items() -> None:
    response, items, events = await run_collecting(nt.run_code("plain", lambda v: v.upper()), "x")
    assert response.output == "X" and items == []
    assert not any(isinstance(e.data, nt.CustomItemEvent) for e in events)


def test_is_custom_item_narrows_to_the_declared_output_for_type_checkers(tmp_path: Any) -> None:
    from mypy import api

    source = tmp_path / "narrowing.py"
    source.write_text(
        "from pydantic import BaseModel\n"
        "import noetic as nt\n"
        "class Out(BaseModel):\n    done: int\n\n"
        "class Ev(BaseModel):\n    step: int\n\n"
        "decl = nt.custom_item('a:b', event=Ev, output=Out)\n"
        "def use(item: object) -> int:\n"
        "    if nt.is_custom_item(item, decl):\n"
        "        assert item.output is not None and item.event is not None\n"
        "        reveal_type(item.output)\n"
        "        reveal_type(item.event)\n"
        "        return item.output.done + item.event.step\n"
        "    return 0\n"
    )
    stdout, _, status = api.run(["--strict", "--no-incremental", str(source)])
    assert 'Revealed type is "narrowing.Out"' in stdout and 'Revealed type is "narrowing.Ev"' in stdout
    assert status == 0, stdout


# --- the final item is exactly {id, type, **output} (CI-2) -----------------------------------

job = nt.custom_item(
    "myapp:job",
    event={"type": "object", "properties": {"pct": {"type": "number"}}, "required": ["pct"]},
    output={
        "type": "object",
        "properties": {"status": {"enum": ["running", "done"]}, "data": {"type": "array"}},
        "required": ["status", "data"],
    },
)


def job_step() -> nt.Step:
    def body(_: Any) -> Iterator[dict[str, float]]:
        yield {"pct": 50.0}
        return None

    return nt.run_code(
        "job",
        body,
        custom_items={"job": job},
        emit_items={"item": "job", "on_done": lambda _: {"status": "done", "data": [1, 2]}},
    )


async def test_ci_2_status_and_data_are_ordinary_output_fields() -> None:
    response, items, _ = await run_collecting(job_step())
    final = next(i for i in response.items if nt.is_custom_item(i, job))
    assert final.status == "done" and final.data == [1, 2] and final.is_complete
    assert dump_item(final) == {"id": final.id, "type": "myapp:job", "status": "done", "data": [1, 2]}
    assert final.model_dump() == dump_item(final)
    snapshots = [i for i in items if nt.is_custom_item(i, job) and not i.is_complete]
    assert [s.event for s in snapshots] == [{"pct": 50.0}]


async def test_ci_2_the_log_and_the_checkpoint_hold_exactly_the_declared_fields(tmp_path: Any) -> None:
    from noetic.durable.items import dump_items, load_items

    response, _, _ = await run_collecting(crawl_step(), ["a", "b"])
    final = next(i for i in response.items if nt.is_custom_item(i, progress))
    record = dump_items([final])
    assert record["items"] == [{"id": final.id, "type": "myapp:progress", "done": 2, "of": 2}]
    (restored,) = load_items(record, {"myapp:progress": progress})
    assert nt.is_custom_item(restored, progress) and restored.output == Progress(done=2, of=2)
    assert dump_item(restored) == dump_item(final)
    legacy = {"items": [{**record["items"][0], "status": "completed", "data": {}}], "custom": [0]}
    (old,) = load_items(legacy, {"myapp:progress": progress})
    assert nt.is_custom_item(old, progress) and dump_item(old) == dump_item(final)
    db = f"sqlite:///{tmp_path / 'ci.db'}"
    async with nt.AgentHarness("jobs", agent_graph=job_step(), storage=db) as h:
        first = await h.run("", execution_id="e1")
    async with nt.AgentHarness("jobs", agent_graph=job_step(), storage=db) as h:
        again = await h.resume("e1")
    (kept,) = [i for i in again.items if isinstance(i, CustomItem)]
    assert dump_item(kept) == {"id": kept.id, "type": "myapp:job", "status": "done", "data": [1, 2]}
    assert kept.id == next(i.id for i in first.items if isinstance(i, CustomItem))


async def test_ci_2_an_open_output_schema_still_cannot_set_id_or_type() -> None:
    loose = nt.custom_item("myapp:loose", output={"type": "object"})
    step = nt.run_code(
        "s",
        lambda v: v,
        custom_items={"loose": loose},
        emit_items={"item": "loose", "on_done": lambda _: {"id": "mine", "n": 1}},
    )
    async with nt.AgentHarness("h", agent_graph=step) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.run("x")
    assert err.value.code == "INVALID_CUSTOM_ITEM" and err.value.field == "id"
