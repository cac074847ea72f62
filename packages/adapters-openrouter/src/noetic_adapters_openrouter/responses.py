"""The Responses API (`POST /responses`, the default endpoint): items in, items out.

Noetic items are Open Responses items, so the mapping is mostly identity:

- **input** — system messages are joined (blank line) into `instructions` after the request's
  own; every other message becomes `{role, content}` with `content` collapsed to a string
  when it is plain text (parts are sent when there are images/files, or text parts carrying
  fields such as `cache_control`; output-only `annotations`/`logprobs` are dropped);
  `function_call` keeps `id`, `call_id`, `name` (rewritten for the wire), `arguments`;
  `function_call_output` keeps `call_id`, `output`; `reasoning` items and `openrouter:*`
  server-tool items are sent back exactly as received (fields the provider sent, nothing
  added), which keeps signatures and `encrypted_content` intact. Provider items of a type
  Noetic does not model arrived wrapped (see output) and are unwrapped. Extension items of
  any other namespace are application items (custom items) and are not sent. Reasoning items
  that came from Chat Completions (they carry `reasoning_details`) are not sent here.
- **output** — final items come from `response.completed` (or `response.incomplete`), never
  from the delta events, whose item ids are placeholders. Items of a type that is neither
  standard nor namespaced (`web_search_call`, `shell_call`, …) become
  `ExtensionItem(type="openrouter:<type>", wire_item=<the item as sent>)`. When there is no
  assistant message but `output_text` is set, an assistant message carrying it comes first.
- **request** — `tools` (flat function tools, then `extra_tools` as given), `tool_choice`,
  `text.format` json_schema named `output` for structured output, `max_output_tokens`,
  top-level `cache_control: {type: ephemeral}` when the request asks for caching, `stream`,
  and every other param unchanged (`temperature`, `reasoning`, `provider`, `include`, …).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from noetic.errors import NoeticConfigError
from noetic.ids import new_item_id
from noetic.items import (
    STANDARD_ITEM_TYPES,
    ContentPart,
    ExtensionItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputText,
    Item,
    MessageItem,
    OutputText,
    ReasoningItem,
    assistant_message,
    parse_item,
)
from noetic.model import ModelRequest, ReasoningDelta, TextDelta

from noetic_adapters_openrouter.endpoint import IncompleteStream, ProviderFailure, RoundResult
from noetic_adapters_openrouter.params import CallParams
from noetic_adapters_openrouter.tool_names import ToolNames
from noetic_adapters_openrouter.usage import parse_usage
from noetic_adapters_openrouter.wire import MalformedPayload

__all__ = ["ResponsesEndpoint", "ResponsesStream", "input_items", "output_items", "part_extras"]

#: The extension field holding a provider item Noetic does not model, as it was received.
WIRE_ITEM = "wire_item"
_OWN_PREFIX = "openrouter:"
_TEXT_DELTAS = frozenset({"response.output_text.delta"})
_REASONING_DELTAS = frozenset({"response.reasoning_text.delta", "response.reasoning_summary_text.delta"})
_FINAL = frozenset({"response.completed", "response.incomplete"})
_OUTPUT_ONLY = frozenset({"annotations", "logprobs"})


class ResponsesEndpoint:
    """`POST /responses`; see the module docstring."""

    path = "/responses"

    def body(
        self, request: ModelRequest, names: ToolNames, params: CallParams, *, stream: bool
    ) -> dict[str, Any]:
        """The request body."""
        system, items = input_items(request.items, names)
        instructions = "\n\n".join(s for s in (request.instructions, *system) if s)
        body: dict[str, Any] = {"model": request.model_id, "input": items}
        if instructions:
            body["instructions"] = instructions
        tools = [_function_tool(t.name, t.description, t.parameters, t.strict, names) for t in request.tools]
        tools.extend(dict(t) for t in params.extra_tools)
        if tools:
            body["tools"] = tools
        if params.tool_choice is not None:
            name = params.tool_choice_name()
            body["tool_choice"] = (
                {"type": "function", "name": names.wire(name)} if name else params.tool_choice
            )
        if request.output_schema is not None:
            body["text"] = {
                "format": {"type": "json_schema", "name": "output", "schema": dict(request.output_schema)}
            }
        if params.max_output_tokens is not None:
            body["max_output_tokens"] = params.max_output_tokens
        if request.cache_control:
            body["cache_control"] = {"type": "ephemeral"}
        body.update(params.extra)
        body["stream"] = stream
        return body

    def round_stream(self, names: ToolNames) -> ResponsesStream:
        """A fresh stream accumulator."""
        return ResponsesStream(names)

    def parse(self, payload: Mapping[str, Any], names: ToolNames) -> RoundResult:
        """A non-streamed response body."""
        if payload.get("error") and not isinstance(payload.get("output"), list):
            raise ProviderFailure(payload, parse_usage(payload.get("usage")))
        return _result(payload, names, {})


class ResponsesStream:
    """Accumulates a streamed Responses round (see `endpoint.RoundStream`)."""

    __slots__ = ("_done", "_final", "_names", "generation_id")

    def __init__(self, names: ToolNames):
        self._names = names
        self._final: Mapping[str, Any] | None = None
        self._done: dict[int, Mapping[str, Any]] = {}
        self.generation_id: str | None = None

    def feed(self, event: Mapping[str, Any]) -> list[TextDelta | ReasoningDelta]:
        """Take one event."""
        kind = event.get("type")
        if kind in _TEXT_DELTAS or kind in _REASONING_DELTAS:
            delta = event.get("delta")
            if not isinstance(delta, str) or not delta:
                return []
            item_id = event.get("item_id") if isinstance(event.get("item_id"), str) else None
            return [TextDelta(delta, item_id) if kind in _TEXT_DELTAS else ReasoningDelta(delta, item_id)]
        response = event.get("response")
        if (
            isinstance(response, Mapping)
            and self.generation_id is None
            and isinstance(response.get("id"), str)
        ):
            self.generation_id = response["id"]
        if kind in _FINAL and isinstance(response, Mapping):
            self._final = response
        elif kind == "response.failed":
            failed = response if isinstance(response, Mapping) else event
            raise ProviderFailure(failed, parse_usage(failed.get("usage")))
        elif kind == "error" or (kind is None and event.get("error")):
            raise ProviderFailure(event)  # a bare error event, typed or not
        elif kind == "response.output_item.done" and isinstance(event.get("item"), Mapping):
            index = event.get("output_index")
            self._done[index if isinstance(index, int) else len(self._done)] = event["item"]
        return []

    def finish(self) -> RoundResult:
        """The round, from `response.completed` / `response.incomplete`."""
        if self._final is None:
            raise IncompleteStream("the stream ended without response.completed")
        return _result(self._final, self._names, self._done)


def _result(
    response: Mapping[str, Any], names: ToolNames, done: Mapping[int, Mapping[str, Any]]
) -> RoundResult:
    usage = parse_usage(response.get("usage"))
    if response.get("status") == "failed":
        raise ProviderFailure(response, usage)
    output = response.get("output")
    raw = output if isinstance(output, list) and output else [done[i] for i in sorted(done)]
    text = response.get("output_text")
    generation_id = response.get("id") if isinstance(response.get("id"), str) else None
    model = response.get("model") if isinstance(response.get("model"), str) else None
    return RoundResult(
        output_items(raw, text if isinstance(text, str) else "", names), usage, generation_id, model
    )


# --- items -> input -------------------------------------------------------------------------


def input_items(items: Sequence[Item], names: ToolNames) -> tuple[list[str], list[dict[str, Any]]]:
    """The system texts (for `instructions`) and the `input` array for `items`."""
    system: list[str] = []
    wire: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, MessageItem):
            if item.role == "system":
                system.append(item.text)
            else:
                wire.append({"role": item.role, "content": _content(item)})
        elif isinstance(item, FunctionCallItem):
            wire.append(
                {
                    "type": "function_call",
                    "id": item.id,
                    "call_id": item.call_id,
                    "name": names.wire(item.name),
                    "arguments": item.arguments,
                }
            )
        elif isinstance(item, FunctionCallOutputItem):
            wire.append({"type": "function_call_output", "call_id": item.call_id, "output": item.output})
        elif isinstance(item, ReasoningItem):
            if "reasoning_details" not in (item.model_extra or {}):
                wire.append(_as_received(item))
        elif isinstance(item, ExtensionItem):
            wrapped = (item.model_extra or {}).get(WIRE_ITEM)
            if isinstance(wrapped, Mapping):
                wire.append(dict(wrapped))
            elif item.type.startswith(_OWN_PREFIX):
                wire.append(_as_received(item))
    return system, wire


def part_extras(part: ContentPart) -> dict[str, Any]:
    """A content part's extra fields worth sending (`cache_control`, …), without the ones that
    only describe provider output (`annotations`, `logprobs`)."""
    return {k: v for k, v in (part.model_extra or {}).items() if k not in _OUTPUT_ONLY}


def _content(message: MessageItem) -> str | list[dict[str, Any]]:
    parts = message.content
    if all(isinstance(p, InputText | OutputText) and not part_extras(p) for p in parts):
        return message.text
    kind = "output_text" if message.role == "assistant" else "input_text"
    wire: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, InputText | OutputText):
            wire.append({**part_extras(part), "type": kind, "text": part.text})
        else:
            wire.append(part.model_dump(mode="json"))
    return wire


def _as_received(item: ReasoningItem | ExtensionItem) -> dict[str, Any]:
    """The item with exactly the fields that were set (as received from the provider)."""
    data = item.model_dump(mode="json", exclude_unset=True)
    data.setdefault("type", item.type)
    return data


def _function_tool(
    name: str, description: str, parameters: Mapping[str, Any], strict: bool | None, names: ToolNames
) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "type": "function",
        "name": names.wire(name),
        "description": description,
        "parameters": dict(parameters),
    }
    if strict is not None:
        tool["strict"] = strict
    return tool


# --- output -> items ------------------------------------------------------------------------


def output_items(output: Sequence[Any], output_text: str, names: ToolNames) -> tuple[Item, ...]:
    """Noetic items for a response's `output` (see the module docstring)."""
    items: list[Item] = []
    for raw in output:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
            continue
        item = _item(raw)
        if isinstance(item, FunctionCallItem):
            if not item.name:
                raise MalformedPayload("a 'function_call' output item has no name")
            original = names.original(item.name)
            if original != item.name:
                item = item.model_copy(update={"name": original})
        items.append(item)
    if output_text and not any(isinstance(i, MessageItem) and i.role == "assistant" for i in items):
        items.insert(0, assistant_message(output_text))
    return tuple(items)


def _item(raw: Mapping[str, Any]) -> Item:
    kind: str = raw["type"]
    if kind in STANDARD_ITEM_TYPES or ":" in kind:
        try:
            return parse_item(dict(raw))
        except NoeticConfigError:
            pass  # a malformed item is kept verbatim rather than lost
    wrapped_type = kind if kind.startswith(_OWN_PREFIX) else _OWN_PREFIX + kind
    raw_id = raw.get("id")
    return ExtensionItem(
        id=raw_id if isinstance(raw_id, str) and raw_id else new_item_id("ext"),
        type=wrapped_type,
        **{WIRE_ITEM: dict(raw)},
    )
