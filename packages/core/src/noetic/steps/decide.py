"""`decide`: ask the model a set of declared questions and record how it answered (TU-3, DC-1).

The step sends the context's log as `call_model` would, with instructions that list the
questions, and asks for one JSON object keyed by question id (`null` declines a question). It
reads the answers two ways:

- **native** — the adapter declares `structured_output = True` (the OpenRouter adapter does):
  the request carries a strict JSON Schema of the answers as `output_schema`, and the reply is
  that JSON;
- **estimated** — any other adapter, or a native reply that is not clean JSON: the answers are
  parsed out of the reply text (a fenced or embedded JSON object).

The output is the answer map `{question id: answer}` of the questions the model answered;
`ctx.last_step_meta.decision` is `DecisionMeta(model_id, source, refused)`, `refused` listing
the ids of declined questions (a model refusal declines them all). An answer that does not fit
its question, or a reply with no readable answers, fails with `DECISION_ANSWER_INVALID`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal

# `anyio.lowlevel` (a checkpoint) is only reached inside a running event loop, whose backend
# has imported it by then; `import noetic` leaves it unloaded.
import anyio
from noetic.errors import NoeticConfigError, NoeticError
from noetic.execution_context import to_decimal
from noetic.items import MessageItem, Refusal, user_message
from noetic.model import ModelAdapter, ModelRequest, ModelResponse, ReasoningDelta, TextDelta
from noetic.records import FrozenRecord, set_field
from noetic.schema import Schema, SchemaError
from noetic.steps.base import Step
from noetic.streams import DELTA_BATCH
from noetic.usage import DecisionMeta, StepMeta

if TYPE_CHECKING:
    import anyio.lowlevel
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context

__all__ = ["Decide", "Question", "QuestionKind", "decide", "question"]

QuestionKind = Literal["text", "yes_no", "choice", "score"]
_KINDS = ("text", "yes_no", "choice", "score")
#: A reply longer than this is not searched for an embedded JSON object (hostile-input bound).
_MAX_REPLY_CHARS = 1_000_000


class Question(FrozenRecord):
    """One declared question: an `id`, the `text` the model reads, and what answers it.

    `text`: any string; `yes_no`: a boolean; `choice`: one of `choices`; `score`: a number from
    `low` to `high`.
    """

    __slots__ = ("choices", "high", "id", "kind", "low", "text")
    id: str
    text: str
    kind: QuestionKind
    choices: tuple[str, ...]
    low: float
    high: float

    def __init__(
        self,
        id: str,
        text: str,
        kind: QuestionKind = "text",
        choices: tuple[str, ...] = (),
        low: float = 0,
        high: float = 10,
    ) -> None:
        set_field(self, "id", id)
        set_field(self, "text", text)
        set_field(self, "kind", kind)
        set_field(self, "choices", choices)
        set_field(self, "low", low)
        set_field(self, "high", high)

    def answer_schema(self) -> dict[str, Any]:
        """The JSON Schema of an answer."""
        if self.kind == "yes_no":
            return {"type": "boolean"}
        if self.kind == "choice":
            return {"type": "string", "enum": list(self.choices)}
        if self.kind == "score":
            return {"type": "number", "minimum": self.low, "maximum": self.high}
        return {"type": "string"}

    def describe(self) -> str:
        """The question as one line of the instructions."""
        if self.kind == "yes_no":
            form = "true or false"
        elif self.kind == "choice":
            form = "one of " + ", ".join(json.dumps(c) for c in self.choices)
        elif self.kind == "score":
            form = f"a number from {self.low:g} to {self.high:g}"
        else:
            form = "a string"
        return f"- {json.dumps(self.id)}: {self.text} (answer: {form})"


def question(
    id: str,
    text: str,
    *,
    kind: QuestionKind = "text",
    choices: Sequence[str] = (),
    low: float = 0,
    high: float = 10,
) -> Question:
    """Declare a question for `decide`; see `Question`."""
    if not isinstance(id, str) or not id.strip() or not isinstance(text, str) or not text.strip():
        raise NoeticConfigError(
            "INVALID_STEP",
            f"a question needs a non-empty id and text, got id={id!r}",
            hint="Write nt.question('risk', 'Is this change risky?', kind='yes_no').",
        )
    if kind not in _KINDS:
        raise NoeticConfigError(
            "INVALID_STEP", f"question {id!r}: unknown kind {kind!r}", hint=f"Use one of {', '.join(_KINDS)}."
        )
    if kind == "choice" and (not choices or not all(isinstance(c, str) for c in choices)):
        raise NoeticConfigError(
            "INVALID_STEP",
            f"question {id!r}: a choice question needs a non-empty list of string choices",
            hint="Pass choices=['low', 'medium', 'high'].",
        )
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high))
    if kind == "score" and not (numbers and low < high):
        raise NoeticConfigError(
            "INVALID_STEP",
            f"question {id!r}: a score needs numbers low < high, got {low!r} and {high!r}",
            hint="Pass low=0, high=10 (the default) or your own range.",
        )
    return Question(id, text, kind, tuple(choices), low, high)


class Decide(Step):
    """Asks the model `questions`; see the module docstring. `model=None` uses the harness
    model; `instructions` come before the question list; `params` go to the model as given."""

    kind = "decide"
    __slots__ = ("_answers", "instructions", "model", "params", "questions")

    def __init__(
        self,
        id: str,
        questions: Sequence[Question],
        *,
        model: str | ModelAdapter | None = None,
        instructions: str | None = None,
        params: Mapping[str, Any] | None = None,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        if not isinstance(questions, list | tuple) or not questions:
            raise NoeticConfigError(
                "INVALID_STEP",
                f"decide {id!r}: questions must be a non-empty list of nt.question(...)",
                hint="Pass questions=[nt.question('risk', 'Is this risky?', kind='yes_no')].",
            )
        ids = [q.id if isinstance(q, Question) else None for q in questions]
        if None in ids or len(set(ids)) != len(ids):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"decide {id!r}: questions must be nt.question(...) values with unique ids",
                hint="Declare each question once with nt.question(id, text, ...).",
            )
        if instructions is not None and not isinstance(instructions, str):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"decide {id!r}: instructions must be a string",
                hint="Pass instructions='...'.",
            )
        self.questions = tuple(questions)
        self.model = model
        self.instructions = instructions
        self.params = dict(params or {})
        self._answers = {q.id: Schema.of(q.answer_schema()) for q in self.questions}

    def output_schema(self) -> dict[str, Any]:
        """The strict JSON Schema of a reply: every question id, its answer or null."""
        properties = {
            q.id: {"anyOf": [q.answer_schema(), {"type": "null"}], "description": q.text}
            for q in self.questions
        }
        return {
            "type": "object",
            "properties": properties,
            "required": [q.id for q in self.questions],
            "additionalProperties": False,
        }

    def _prompt(self) -> str:
        lines = [self.instructions] if self.instructions else []
        lines.append(
            "Answer each question below. Reply with one JSON object whose keys are the question ids "
            "and whose values are your answers; use null for a question you decline to answer."
        )
        lines.extend(q.describe() for q in self.questions)
        return "\n".join(lines)

    async def run(self, input: Any, ctx: Context) -> Any:
        run = ctx._exec
        adapter = run.harness.resolve_model(self.model)
        if isinstance(input, str) and input:
            ctx.item_log.append(user_message(input))
        native = getattr(adapter, "structured_output", False) is True
        request = ModelRequest(
            model_id=adapter.model_id,
            items=tuple(ctx.item_log.items),
            instructions=self._prompt(),
            output_schema=self.output_schema() if native else None,
            params=self.params,
            cache_control=run.harness.cache_control,
            execution_id=ctx.id,
            thread_id=ctx.thread_id,
            billing=run.billing(ctx),
        )
        response = await self._stream(adapter, request, ctx)
        cost = to_decimal(response.cost)
        billed = cost if response.billed_cost is None else to_decimal(response.billed_cost)
        ctx._record_round(response.usage, cost, billed)
        for item in response.items:
            ctx.item_log.append(item)
        answers, refused, source = self._read(response, native)
        ctx.last_step_meta = StepMeta(
            step_id=self.id,
            kind=self.kind,
            usage=response.usage,
            cost=float(cost),
            billed_cost=float(billed),
            response_items=tuple(response.items),
            decision=DecisionMeta(
                model_id=response.model_id or adapter.model_id, source=source, refused=tuple(refused)
            ),
        )
        return answers

    async def _stream(self, adapter: ModelAdapter, request: ModelRequest, ctx: Context) -> ModelResponse:
        run = ctx._exec
        run.emit("model_call_started", {"step_id": self.id, "model_id": request.model_id, "round": 0})
        response: ModelResponse | None = None
        unread = 0  # deltas since the consumers last had a chance to run (ST-2)
        with ctx.abortable():  # the model stream is Noetic's own wait (CTX-13)
            async with aclosing(adapter.stream(request, cancel=ctx)) as stream:  # type: ignore[type-var]
                async for event in stream:
                    if type(event) is TextDelta or type(event) is ReasoningDelta:
                        run.publish_delta(event)
                        unread += 1
                        if unread == DELTA_BATCH:
                            unread = 0
                            await anyio.lowlevel.checkpoint()
                    elif isinstance(event, ModelResponse):
                        response = event
        if response is None:
            raise NoeticError(
                "model_stream_error",
                f"model {request.model_id!r} ended its stream without a final response",
                step_id=self.id,
            )
        run.emit(
            "model_call_completed",
            {"step_id": self.id, "model_id": response.model_id or request.model_id, "usage": response.usage},
        )
        return response

    def _read(self, response: ModelResponse, native: bool) -> tuple[dict[str, Any], list[str], str]:
        """The answers, the refused ids and the source, from the reply (DC-1)."""
        messages = [i for i in response.items if isinstance(i, MessageItem) and i.role == "assistant"]
        text = messages[-1].text if messages else ""
        refusal = any(isinstance(p, Refusal) for m in messages for p in m.content)
        reply = _strict_json(text) if native else None
        source = "native" if reply is not None else "estimated"
        if reply is None:
            reply = _embedded_json(text)
        if reply is None:
            if refusal:
                return {}, [q.id for q in self.questions], source
            raise NoeticError(
                "DECISION_ANSWER_INVALID",
                f"decide {self.id!r}: the model's reply holds no JSON object of answers",
                step_id=self.id,
            )
        answers: dict[str, Any] = {}
        refused: list[str] = []
        for q in self.questions:
            value = reply.get(q.id)
            if value is None:
                refused.append(q.id)
                continue
            try:
                answers[q.id] = self._answers[q.id].validate(value)
            except SchemaError as exc:
                raise NoeticError(
                    "DECISION_ANSWER_INVALID",
                    f"decide {self.id!r}: the answer to {q.id!r} does not fit the question: {exc}",
                    step_id=self.id,
                    question_id=q.id,
                ) from None
        return answers, refused, source


def _as_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _strict_json(text: str) -> dict[str, Any] | None:
    """The reply as it should come from structured output: one JSON object, nothing else."""
    return _as_object(text.strip())


def _embedded_json(text: str) -> dict[str, Any] | None:
    """A JSON object found in free text: a fenced block, else the outermost braces."""
    if len(text) > _MAX_REPLY_CHARS:
        return None
    opened = text.find("```")
    closed = text.find("```", opened + 3) if opened >= 0 else -1
    if closed > opened:
        found = _as_object(text[opened + 3 : closed].removeprefix("json").strip())
        if found is not None:
            return found
    start, end = text.find("{"), text.rfind("}")
    return _as_object(text[start : end + 1]) if 0 <= start < end else None


def decide(
    id: str,
    questions: Sequence[Question],
    *,
    model: str | ModelAdapter | None = None,
    instructions: str | None = None,
    params: Mapping[str, Any] | None = None,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> Decide:
    """A step that asks the model `questions` and returns the answer map; see `Decide`."""
    return Decide(
        id,
        questions,
        model=model,
        instructions=instructions,
        params=params,
        custom_items=custom_items,
        emit_items=emit_items,
    )
