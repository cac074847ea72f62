"""Each item's JSON text is encoded once per item object and forgotten with the item."""

from __future__ import annotations

import gc
import json

from noetic.durable import items
from noetic.items import user_message


def test_an_items_text_is_reused_and_dropped_with_the_item() -> None:
    message = user_message("hello")
    text = items.item_json(message)
    assert items.item_json(message) is text  # encoded once
    assert id(message) in items._texts
    key = id(message)
    del message
    gc.collect()
    assert key not in items._texts or items._texts[key][0]() is not None  # gone, or the id reused


def test_items_json_is_the_record_load_items_reads_back() -> None:
    log = [user_message("a"), user_message("b")]
    record = items.ItemsRecord.model_validate(json.loads(items.items_json(log)))
    assert items.load_items(record, {}) == log
    assert items.load_items(items.dump_items(log), {}) == log  # the same record as data
