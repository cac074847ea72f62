"""Chat Completions (`POST /chat/completions`), the optional endpoint.

Items become OpenAI-shaped `messages`: the request's instructions first as a `system`
message, system and developer messages as `system`, user messages with text (or `text` /
`image_url` / `file` parts when there are attachments or `cache_control`), assistant
messages with their text, `function_call` items folded into the preceding assistant message's
`tool_calls` (or a new assistant message with `content: null`), `function_call_output` as
`role: tool` messages. A reasoning item produced by this endpoint carries the raw
`reasoning_details` (signatures, encrypted data) and is replayed on the next assistant message,
unmodified, as reasoning continuations require; other reasoning items and extension items
(server-tool items exist only on the Responses API) are not sent.

The answer becomes, in order: a `reasoning` item (text, summary, encrypted content and the
merged `reasoning_details`), an assistant message (status `incomplete` when cut by
`length`/`content_filter`; `url_citation` annotations kept on the text part), and one
`function_call` per tool call. In a stream, deltas are merged by index: tool-call arguments
are appended, reasoning details concatenate their text and keep the late signature, usage is
taken from whichever chunk carries it (also an error chunk), and `[DONE]` ends the round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from noetic.ids import new_item_id
from noetic.items import (
    ContentPart,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputText,
    Item,
    MessageItem,
    OutputText,
    ReasoningItem,
    Refusal,
)
from noetic.model import ModelRequest, ReasoningDelta, TextDelta

from noetic_adapters_openrouter.endpoint import ProviderFailure, RoundResult
from noetic_adapters_openrouter.params import CallParams
from noetic_adapters_openrouter.responses import part_extras
from noetic_adapters_openrouter.tool_names import ToolNames
from noetic_adapters_openrouter.usage import ProviderUsage, parse_usage
from noetic_adapters_openrouter.wire import MalformedPayload, array, count, mapping, string

__all__ = ["ChatEndpoint", "ChatStream", "chat_messages"]

_CUT_SHORT = frozenset({"length", "content_filter"})
_CONCATENATED = ("text", "summary", "data")


class ChatEndpoint:
    """`POST /chat/completions`; see the module docstring."""

    path = "/chat/completions"

    def body(
        self, request: ModelRequest, names: ToolNames, params: CallParams, *, stream: bool
    ) -> dict[str, Any]:
        """The request body."""
        body: dict[str, Any] = {"model": request.model_id, "messages": chat_messages(request, names)}
        tools: list[dict[str, Any]] = []
        for t in request.tools:
            function: dict[str, Any] = {
                "name": names.wire(t.name),
                "description": t.description,
                "parameters": dict(t.parameters),
            }
            if t.strict is not None:
                function["strict"] = t.strict
            tools.append({"type": "function", "function": function})
        tools.extend(dict(t) for t in params.extra_tools)
        if tools:
            body["tools"] = tools
        if params.tool_choice is not None:
            name = params.tool_choice_name()
            body["tool_choice"] = (
                {"type": "function", "function": {"name": names.wire(name)}} if name else params.tool_choice
            )
        if request.output_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": dict(request.output_schema)},
            }
        if params.max_output_tokens is not None:
            body["max_completion_tokens"] = params.max_output_tokens
        if request.cache_control:
            body["cache_control"] = {"type": "ephemeral"}
        body.update(params.extra)
        body["stream"] = stream
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def round_stream(self, names: ToolNames) -> ChatStream:
        """A fresh stream accumulator."""
        return ChatStream(names)

    def parse(self, payload: Mapping[str, Any], names: ToolNames) -> RoundResult:
        """A non-streamed completion body."""
        usage = parse_usage(payload.get("usage"))
        choices = payload.get("choices")
        if payload.get("error") or not isinstance(choices, list) or not choices:
            raise ProviderFailure(_failure(payload, "the completion has no choices"), usage)
        choice = mapping(choices[0])
        message = mapping(choice.get("message"))
        finish = choice.get("finish_reason")
        if finish == "error":
            raise ProviderFailure(_failure(payload, "the model stopped with finish_reason 'error'"), usage)
        calls = {
            i: c
            for i, c in enumerate(array(message.get("tool_calls"), "tool_calls"))
            if isinstance(c, Mapping)
        }
        details = {
            i: d
            for i, d in enumerate(array(message.get("reasoning_details"), "reasoning_details"))
            if isinstance(d, Mapping)
        }
        items = _items(
            message_id=new_item_id("msg"),
            text=string(message.get("content")),
            refusal=string(message.get("refusal")),
            reasoning=string(message.get("reasoning")),
            details=details,
            annotations=[
                a for a in array(message.get("annotations"), "annotations") if isinstance(a, Mapping)
            ],
            calls=calls,
            finish_reason=finish if isinstance(finish, str) else None,
            names=names,
        )
        return RoundResult(
            items, usage, string(payload.get("id")) or None, string(payload.get("model")) or None
        )


class ChatStream:
    """Accumulates a streamed Chat Completions round (see `endpoint.RoundStream`)."""

    __slots__ = (
        "_annotations",
        "_calls",
        "_details",
        "_finish",
        "_message_id",
        "_model",
        "_names",
        "_reasoning",
        "_refusal",
        "_text",
        "_usage",
        "generation_id",
    )

    def __init__(self, names: ToolNames):
        self._names = names
        self._message_id = new_item_id("msg")
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._reasoning: list[str] = []
        self._details: dict[int, dict[str, Any]] = {}
        self._calls: dict[int, dict[str, Any]] = {}
        self._annotations: list[Mapping[str, Any]] = []
        self._usage: ProviderUsage | None = None
        self._finish: str | None = None
        self._model: str | None = None
        self.generation_id: str | None = None

    def feed(self, chunk: Mapping[str, Any]) -> list[TextDelta | ReasoningDelta]:
        """Take one chunk."""
        if self.generation_id is None and isinstance(chunk.get("id"), str):
            self.generation_id = chunk["id"]
        if self._model is None and isinstance(chunk.get("model"), str):
            self._model = chunk["model"]
        usage = parse_usage(chunk.get("usage"))
        if usage is not None:
            self._usage = usage
        if chunk.get("error"):
            raise ProviderFailure(chunk, self._usage)
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return []
        choice = choices[0]
        finish = choice.get("finish_reason")
        if finish == "error":
            raise ProviderFailure(
                _failure(chunk, "the model stopped with finish_reason 'error'"), self._usage
            )
        if isinstance(finish, str) and finish:
            self._finish = finish
        delta = choice.get("delta")
        return self._delta(delta) if isinstance(delta, Mapping) else []

    def _delta(self, delta: Mapping[str, Any]) -> list[TextDelta | ReasoningDelta]:
        out: list[TextDelta | ReasoningDelta] = []
        reasoning = string(delta.get("reasoning"))
        detail_text = ""
        for detail in array(delta.get("reasoning_details"), "reasoning_details"):
            if isinstance(detail, Mapping):
                detail_text += string(detail.get("text")) or string(detail.get("summary"))
                _merge_detail(self._details, detail)
        shown = reasoning or detail_text
        if shown:
            self._reasoning.append(shown)
            out.append(ReasoningDelta(shown))
        text = string(delta.get("content"))
        if text:
            self._text.append(text)
            out.append(TextDelta(text, self._message_id))
        refusal = string(delta.get("refusal"))
        if refusal:
            self._refusal.append(refusal)
        self._annotations.extend(
            a for a in array(delta.get("annotations"), "annotations") if isinstance(a, Mapping)
        )
        for position, call in enumerate(array(delta.get("tool_calls"), "tool_calls")):
            if isinstance(call, Mapping):
                _merge_call(self._calls, call, position)
        return out

    def finish(self) -> RoundResult:
        """The round after `[DONE]`."""
        items = _items(
            message_id=self._message_id,
            text="".join(self._text),
            refusal="".join(self._refusal),
            reasoning="".join(self._reasoning),
            details=self._details,
            annotations=self._annotations,
            calls=self._calls,
            finish_reason=self._finish,
            names=self._names,
        )
        return RoundResult(items, self._usage, self.generation_id, self._model)


# --- items -> messages ----------------------------------------------------------------------


def chat_messages(request: ModelRequest, names: ToolNames) -> list[dict[str, Any]]:
    """The `messages` array for a request (see the module docstring)."""
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    pending: list[Any] = []  # reasoning_details waiting for their assistant message

    def assistant(content: str | None) -> dict[str, Any]:
        nonlocal pending
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if pending:
            message["reasoning_details"], pending = pending, []
        messages.append(message)
        return message

    for item in request.items:
        if isinstance(item, MessageItem):
            if item.role == "assistant":
                assistant(item.text)
            else:
                role = "user" if item.role == "user" else "system"
                messages.append({"role": role, "content": _content(item.content, item.text)})
        elif isinstance(item, FunctionCallItem):
            last = messages[-1] if messages else None
            target = last if last is not None and last["role"] == "assistant" else assistant(None)
            target.setdefault("tool_calls", []).append(
                {
                    "id": item.call_id,
                    "type": "function",
                    "function": {"name": names.wire(item.name), "arguments": item.arguments},
                }
            )
        elif isinstance(item, FunctionCallOutputItem):
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": item.output})
        elif isinstance(item, ReasoningItem):
            details = (item.model_extra or {}).get("reasoning_details")
            if isinstance(details, list):
                pending.extend(details)
    return messages


def _content(parts: Sequence[ContentPart], text: str) -> str | list[dict[str, Any]]:
    if all(isinstance(p, InputText | OutputText) and not part_extras(p) for p in parts):
        return text
    wire: list[dict[str, Any]] = []
    for part in parts:
        extra = part.model_extra or {}
        if isinstance(part, InputText | OutputText):
            entry: dict[str, Any] = {**part_extras(part), "type": "text", "text": part.text}
        elif part.type == "input_image":
            image = {k: extra[k] for k in ("detail",) if k in extra}
            entry = {"type": "image_url", "image_url": {"url": extra.get("image_url"), **image}}
        elif part.type == "input_file":
            entry = {
                "type": "file",
                "file": {k: extra[k] for k in ("filename", "file_data", "file_id") if k in extra},
            }
        else:
            entry = part.model_dump(mode="json")
        wire.append(entry)
    return wire


# --- answer -> items ------------------------------------------------------------------------


def _items(
    *,
    message_id: str,
    text: str,
    refusal: str,
    reasoning: str,
    details: Mapping[int, Mapping[str, Any]],
    annotations: Sequence[Mapping[str, Any]],
    calls: Mapping[int, Mapping[str, Any]],
    finish_reason: str | None,
    names: ToolNames,
) -> tuple[Item, ...]:
    items: list[Item] = []
    ordered = [dict(details[i]) for i in sorted(details)]
    if reasoning or ordered:
        items.append(_reasoning_item(reasoning, ordered))
    if text or refusal or annotations:
        content: list[ContentPart] = []
        if text or annotations:
            content.append(
                OutputText(text=text, annotations=list(annotations)) if annotations else OutputText(text=text)
            )
        if refusal:
            content.append(Refusal(refusal=refusal))
        status = "incomplete" if finish_reason in _CUT_SHORT else "completed"
        items.append(MessageItem(id=message_id, role="assistant", content=content, status=status))
    for index in sorted(calls):
        call = calls[index]
        function = mapping(call.get("function"))
        if not string(function.get("name")):
            raise MalformedPayload(f"the tool call at 'tool_calls' index {index} has no function name")
        items.append(
            FunctionCallItem(
                call_id=string(call.get("id")) or new_item_id("call"),
                name=names.original(string(function.get("name"))),
                arguments=string(function.get("arguments")) or "{}",
            )
        )
    return tuple(items)


def _reasoning_item(text: str, details: list[dict[str, Any]]) -> ReasoningItem:
    summaries = [d["summary"] for d in details if d.get("type") == "reasoning.summary" and d.get("summary")]
    encrypted = next(
        (d["data"] for d in details if d.get("type") == "reasoning.encrypted" and d.get("data")), None
    )
    detail_id = next((d["id"] for d in details if isinstance(d.get("id"), str) and d["id"]), None)
    fields: dict[str, Any] = {
        "content": [{"type": "reasoning_text", "text": text}] if text else [],
        "summary": [{"type": "summary_text", "text": s} for s in summaries],
        "reasoning_details": details,
    }
    if encrypted is not None:
        fields["encrypted_content"] = encrypted
    if detail_id is not None:
        fields["id"] = detail_id
    return ReasoningItem.model_validate(fields)


def _merge_detail(details: dict[int, dict[str, Any]], detail: Mapping[str, Any]) -> None:
    index = count(detail.get("index"))
    index = len(details) if index is None else index
    known = details.get(index)
    if known is None:
        details[index] = dict(detail)
        return
    for key, value in detail.items():
        if key in _CONCATENATED and isinstance(value, str):
            known[key] = string(known.get(key)) + value
        elif value not in (None, ""):
            known[key] = value


def _merge_call(calls: dict[int, dict[str, Any]], call: Mapping[str, Any], position: int) -> None:
    index = count(call.get("index"))
    index = position if index is None else index
    known = calls.setdefault(index, {"function": {}})
    if string(call.get("id")):
        known["id"] = call["id"]
    function = call.get("function")
    if isinstance(function, Mapping):
        if string(function.get("name")):
            known["function"]["name"] = function["name"]
        known["function"]["arguments"] = string(known["function"].get("arguments")) + string(
            function.get("arguments")
        )


def _failure(payload: Mapping[str, Any], message: str) -> Mapping[str, Any]:
    return payload if payload.get("error") else {**payload, "error": {"message": message}}
