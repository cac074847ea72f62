"""Items, usage and the item log (IL-1..IL-5, IL-7, TU-1..TU-3)."""

from __future__ import annotations

import json
from typing import Any

import noetic as nt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from noetic.items import (
    ExtensionItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputText,
    ItemLog,
    MessageItem,
    OtherPart,
    OutputText,
    ReasoningItem,
    Refusal,
    dump_item,
    parse_item,
    user_message,
)
from noetic.usage import LastLayerUsage, LayerUsageEntry, RoundUsage, StepMeta

text = st.text(max_size=40)
ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=20)
status = st.sampled_from(["in_progress", "completed", "incomplete", "failed"])
parts = st.one_of(
    st.builds(InputText, text=text),
    st.builds(OutputText, text=text),
    st.builds(Refusal, refusal=text),
    st.builds(OtherPart, type=st.sampled_from(["summary_text", "reasoning_text"]), text=text),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
items = st.one_of(
    st.builds(
        MessageItem,
        id=ids,
        status=status,
        role=st.sampled_from(["user", "assistant", "system", "developer"]),
        content=st.lists(parts, max_size=3),
    ),
    st.builds(FunctionCallItem, id=ids, status=status, call_id=ids, name=ids, arguments=text),
    st.builds(FunctionCallOutputItem, id=ids, status=status, call_id=ids, output=text),
    st.builds(
        ReasoningItem,
        id=ids,
        status=status,
        content=st.lists(parts, max_size=2),
        summary=st.none() | st.lists(parts, max_size=2),
        encrypted_content=st.none() | text,
    ),
    st.builds(
        ExtensionItem,
        id=ids,
        status=status,
        type=st.tuples(ids, ids).map(":".join),
        data=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    ),
)


@given(items)
def test_il_2_every_item_variant_round_trips_through_the_wire_shape(item: Any) -> None:
    wire = json.loads(json.dumps(dump_item(item)))
    assert parse_item(wire) == item
    assert wire["type"] == item.type and "id" in wire and "status" in wire


def test_il_2_wire_shape_is_snake_case_with_a_type_discriminator() -> None:
    call = FunctionCallItem(id="fc_1", call_id="c1", name="f", arguments="{}")
    assert dump_item(call) == {
        "id": "fc_1",
        "status": "completed",
        "type": "function_call",
        "call_id": "c1",
        "name": "f",
        "arguments": "{}",
    }
    reasoning = parse_item(
        {
            "type": "reasoning",
            "id": "rs_1",
            "content": [],
            "encrypted_content": "opaque",
            "summary": [{"type": "summary_text", "text": "thought"}],
        }
    )
    assert isinstance(reasoning, ReasoningItem) and reasoning.encrypted_content == "opaque"
    assert dump_item(reasoning)["summary"] == [{"type": "summary_text", "text": "thought"}]


def test_il_5_extension_items_need_a_namespaced_type_and_keep_unknown_fields() -> None:
    item = parse_item({"type": "openrouter:web_search", "id": "ws_1", "status": "completed", "query": "x"})
    assert isinstance(item, ExtensionItem) and dump_item(item)["query"] == "x"
    with pytest.raises(nt.NoeticConfigError) as err:
        parse_item({"type": "web_search", "id": "x"})
    assert err.value.code == "INVALID_ITEM" and "prefix:name" in err.value.message


def test_il_3_items_have_ids_and_statuses_by_default() -> None:
    msg = MessageItem(role="assistant", content="hi")
    assert msg.id.startswith("msg_") and msg.status == "completed" and msg.is_complete
    assert msg.content == [OutputText(text="hi")]
    assert user_message("yo").content == [InputText(text="yo")]


def test_il_1_item_log_is_append_only_with_a_read_only_view() -> None:
    log = ItemLog()
    view = log.items
    log.append({"type": "message", "role": "user", "content": "a", "id": "m1"})
    log.append(user_message("b"))
    assert len(view) == 2 and view[0].id == "m1"
    assert not hasattr(view, "append")
    with pytest.raises(TypeError):
        view[0] = user_message("c")  # type: ignore[index]
    assert "m1" in log


def test_il_7_quiet_append_dedupes_by_id() -> None:
    log = ItemLog()
    item = user_message("x")
    heard: list[Any] = []
    log.listen(heard.append)
    assert log.append_quietly(item) and not log.append_quietly(item)
    assert len(log) == 1 and heard == []


def test_tu_2_round_usage_cache_fields_keep_none_and_zero_apart() -> None:
    absent = RoundUsage.model_validate({"input_tokens": 3, "output_tokens": 1})
    zero = RoundUsage.model_validate(
        {"input_tokens": 3, "output_tokens": 1, "cached_tokens": 0, "cache_write_tokens": 0}
    )
    assert absent.cached_tokens is None and absent.cache_write_tokens is None
    assert zero.cached_tokens == 0 and zero.cache_write_tokens == 0
    assert RoundUsage.model_validate_json(absent.model_dump_json()).cached_tokens is None
    assert RoundUsage.model_validate_json(zero.model_dump_json()).cached_tokens == 0


def test_tu_3_step_meta_and_layer_usage_shapes() -> None:
    meta = StepMeta(
        usage=RoundUsage(),
        cost=0.1,
        billed_cost=0.0,
        decision={"model_id": "m", "source": "native", "refused": ["q1"]},
    )  # type: ignore[arg-type]
    assert meta.decision is not None and meta.decision.refused == ("q1",)
    usage = LastLayerUsage(
        execution_id="e",
        model_id="m",
        layers=(LayerUsageEntry(layer_id="a", token_count=3),),
        total_used_tokens=3,
    )
    assert usage.epoch is None and usage.layers[0].served == "fresh"
