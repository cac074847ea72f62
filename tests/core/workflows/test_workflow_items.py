"""Custom items in documents: name resolution, code-side declarations, validation
(CI-9, CI-11, CI-12)."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.plugins import make_plugin_manager
from pydantic import BaseModel

pytestmark = pytest.mark.anyio

OBJECT = {"type": "object"}


def item(type: str, **output_props: Any) -> dict[str, Any]:
    return {"type": type, "event": OBJECT, "output": {"type": "object", "properties": output_props}}


def emitting(name: str, *, expr: str = "{ 'v': 1 }", **node: Any) -> dict[str, Any]:
    return {"kind": "compute", "id": "c", "expr": expr, "emitItems": {"item": name, "onDone": "$"}, **node}


def doc(root: dict[str, Any], **items: Any) -> dict[str, Any]:
    return {"version": 1, "root": root, **({"customItems": items} if items else {})}


async def test_ci_11_a_node_item_wins_over_the_root_item(run_turn: Any) -> None:
    flow = nt.workflow("w", doc(emitting("p", customItems={"p": item("node:p")}), p=item("root:p")))
    turn = await run_turn(flow)
    assert [f.type for f in turn.custom_finals()] == ["node:p"]


async def test_ci_11_the_root_item_is_in_scope_for_every_node(run_turn: Any) -> None:
    flow = nt.workflow(
        "w",
        doc(
            {"kind": "sequence", "id": "s", "steps": [emitting("p", id="c1"), emitting("p", id="c2")]},
            p=item("root:p"),
        ),
    )
    assert [f.type for f in (await run_turn(flow)).custom_finals()] == ["root:p", "root:p"]


async def test_check_49_an_unknown_item_name_is_unknown_custom_item(run_turn: Any) -> None:
    flow = nt.workflow("w", doc(emitting("nope"), p=item("root:p")))
    with pytest.raises(nt.NoeticConfigError) as err:
        await run_turn(flow)
    assert err.value.code == "UNKNOWN_CUSTOM_ITEM"
    assert err.value.path == "$.root.emitItems.item"


async def test_an_item_registered_by_a_plugin_resolves_by_name(run_turn: Any) -> None:
    registered = nt.custom_item("plugin:p", output={"type": "object"})

    class Plugin:
        @nt.hookimpl
        def register_custom_items(self, register: Any) -> None:
            register("p", registered)

    turn = await run_turn(
        nt.workflow("w", doc(emitting("p"))), plugins=make_plugin_manager(plugins=[Plugin()])
    )
    assert [nt.is_custom_item(f, registered) for f in turn.custom_finals()] == [True]


def subflow(inner_items: dict[str, Any] | None) -> dict[str, Any]:
    inner = {"version": 1, "root": emitting("p")}
    if inner_items:
        inner["customItems"] = inner_items
    return {"kind": "subflow", "id": "sub", "document": inner}


async def test_check_49_a_subflows_own_declaration_beats_the_parents(run_turn: Any) -> None:
    own = nt.workflow("w", doc(subflow({"p": item("sub:p")}), p=item("parent:p")))
    inherited = nt.workflow("w", doc(subflow(None), p=item("parent:p")))
    assert [f.type for f in (await run_turn(own)).custom_finals()] == ["sub:p"]
    assert [f.type for f in (await run_turn(inherited)).custom_finals()] == ["parent:p"]


async def test_ci_11_a_named_subflow_sees_the_enclosing_workflows_items(run_turn: Any) -> None:
    flow = nt.workflow(
        "w",
        doc({"kind": "subflow", "id": "sub", "ref": "child"}, p=item("parent:p")),
        workflows={"child": {"version": 1, "root": emitting("p")}},
    )
    turn = await run_turn(flow)
    assert [f.type for f in turn.custom_finals()] == ["parent:p"]


class Progress(BaseModel):
    done: int
    of: int


progress = nt.custom_item("myapp:progress", output=Progress)


def test_check_50_a_type_clash_with_a_code_side_declaration_is_custom_item_mismatch() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc(emitting("progress"), progress=item("a:b")), custom_items={"progress": progress})
    assert err.value.code == "CUSTOM_ITEM_MISMATCH"
    assert err.value.path == "$.customItems.progress.type"
    assert "a:b" in err.value.message
    assert "myapp:progress" in err.value.message


async def test_ci_12_the_code_side_declaration_validates_and_types_a_shared_name(run_turn: Any) -> None:
    shared = item("myapp:progress", done={"type": "number"}, of={"type": "number"})
    ok = nt.workflow(
        "w",
        doc(emitting("progress", expr="{ 'done': 1, 'of': 2 }"), progress=shared),
        custom_items={"progress": progress},
    )
    [final] = (await run_turn(ok)).custom_finals()
    assert nt.is_custom_item(final, progress)
    assert final.output == Progress(done=1, of=2)
    # 1.5 passes the document's schema (number) but not the code-side model (int).
    loose = nt.workflow(
        "w",
        doc(emitting("progress", expr="{ 'done': 1.5, 'of': 2 }"), progress=shared),
        custom_items={"progress": progress},
    )
    with pytest.raises(nt.NoeticError) as err:
        await run_turn(loose)
    assert err.value.code == "INVALID_CUSTOM_ITEM"


async def test_ci_12_code_side_items_are_in_scope_without_a_document_declaration(run_turn: Any) -> None:
    flow = nt.workflow(
        "w", doc(emitting("progress", expr="{ 'done': 3, 'of': 3 }")), custom_items={"progress": progress}
    )
    [final] = (await run_turn(flow)).custom_finals()
    assert nt.is_custom_item(final, progress)
    assert final.done == 3


async def test_ci_12_the_documents_json_schema_validates_its_own_items(run_turn: Any) -> None:
    strict = {
        "type": "doc:p",
        "output": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    }
    flow = nt.workflow("w", doc(emitting("p", expr="{ 'n': 'three' }"), p=strict))
    with pytest.raises(nt.NoeticError) as err:
        await run_turn(flow)
    assert err.value.code == "INVALID_CUSTOM_ITEM"
    assert err.value.field == "n"


def test_a_document_declaration_with_a_bad_type_is_invalid_custom_item_type() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc(emitting("p"), p=item("no-colon")))
    assert err.value.code == "INVALID_CUSTOM_ITEM_TYPE"
    assert err.value.path == "$.customItems.p"


async def test_ci_8_emit_items_true_emits_an_output_whose_type_names_an_item(run_turn: Any) -> None:
    node = {"kind": "compute", "id": "c", "expr": "{ 'type': 'root:p', 'v': 2 }", "emitItems": True}
    [final] = (await run_turn(nt.workflow("w", doc(node, p=item("root:p"))))).custom_finals()
    assert final.v == 2


async def test_on_start_without_on_done_is_a_stream_only_dispatch(run_turn: Any) -> None:
    node = {
        "kind": "compute",
        "id": "c",
        "expr": "1",
        "emitItems": {"item": "p", "onStart": "{ 'at': 'start' }"},
    }
    turn = await run_turn(nt.workflow("w", doc(node, p=item("root:p"))))
    assert [e.event for e in turn.custom_events()] == [{"at": "start"}]
    assert turn.custom_finals() == []  # CI-7: events only, never in the log


async def test_ci_15_a_document_without_items_emits_none(run_turn: Any) -> None:
    turn = await run_turn(nt.workflow("w", doc({"kind": "compute", "id": "c", "expr": "1"})))
    assert turn.response.output == 1
    assert turn.custom_events() == []
    assert turn.custom_finals() == []
