"""Token estimates (about four characters per token) for when a provider reports none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from noetic.items import (
    ExtensionItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    Item,
    MessageItem,
    ReasoningItem,
)
from noetic.model import ToolDefinition

__all__ = [
    "CHARS_PER_TOKEN",
    "estimate_item_tokens",
    "estimate_items",
    "estimate_text",
    "estimate_tool",
    "estimate_value",
]


#: Characters per token of the estimates.
CHARS_PER_TOKEN = 4


def estimate_text(text: str) -> int:
    """Tokens in `text`, estimated at four characters per token (rounded up)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_value(value: Mapping[str, Any] | Any) -> int:
    """Tokens in the JSON form of `value`."""
    import json  # on first use: `import json` compiles its regexes (5 M instructions)

    return estimate_text(json.dumps(value, separators=(",", ":"), default=str))


def estimate_item_tokens(item: Item) -> int:
    """Tokens an item costs in a request."""
    if isinstance(item, MessageItem):
        return 4 + sum(
            estimate_text(getattr(p, "text", "") or getattr(p, "refusal", "")) for p in item.content
        )
    if isinstance(item, FunctionCallItem):
        return 4 + estimate_text(item.name) + estimate_text(item.arguments)
    if isinstance(item, FunctionCallOutputItem):
        return 4 + estimate_text(item.output)
    if isinstance(item, ReasoningItem):
        return (
            4
            + sum(estimate_text(getattr(p, "text", "")) for p in item.content)
            + (estimate_text(item.encrypted_content) if item.encrypted_content else 0)
        )
    assert isinstance(item, ExtensionItem)
    return 4 + estimate_value(item.model_dump(mode="json"))


def estimate_items(items: Iterable[Item]) -> int:
    """Tokens of a sequence of items."""
    return sum(estimate_item_tokens(item) for item in items)


#: Estimates of tool definitions by identity. A definition is frozen and a tool keeps its own, so
#: one JSON encoding serves every later call; the cache holds the definition it measured (so its
#: id cannot be reused) and starts over when full.
_TOOL_TOKENS: dict[int, tuple[ToolDefinition, int]] = {}
_TOOL_TOKENS_MAX = 1024


def estimate_tool(definition: ToolDefinition) -> int:
    """Tokens of one tool definition as sent to the model."""
    hit = _TOOL_TOKENS.get(id(definition))
    if hit is not None and hit[0] is definition:
        return hit[1]
    tokens = estimate_value(
        {
            "name": definition.name,
            "description": definition.description,
            "parameters": dict(definition.parameters),
        }
    )
    if len(_TOOL_TOKENS) >= _TOOL_TOKENS_MAX:
        _TOOL_TOKENS.clear()
    _TOOL_TOKENS[id(definition)] = (definition, tokens)
    return tokens
