"""One validator shape for the three ways a schema is written: a pydantic model, a Python type,
or a JSON Schema dict.

`Schema.of(spec)` wraps any of them. `validate` returns the validated value (a model instance
for a pydantic model, the plain value otherwise) or raises `SchemaError` whose `problems` name
each failing field and what was expected; `json_schema` gives the JSON Schema to send a model.
`jsonschema` is imported only when a dict schema is first used.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from itertools import islice
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from noetic.records import FrozenRecord, set_field

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["Schema", "SchemaError", "SchemaProblem", "to_jsonable"]

#: How long one validation message and how many problems a `SchemaError` gets at most.
_MESSAGE_LENGTH = 300
_MAX_PROBLEMS = 50


class SchemaProblem(FrozenRecord):
    """One failing field: its dotted path (`""` for the whole value) and the complaint."""

    __slots__ = ("message", "path")
    path: str
    message: str

    def __init__(self, path: str, message: str) -> None:
        set_field(self, "path", path)
        set_field(self, "message", message)

    def __str__(self) -> str:
        return f"{self.path or '<value>'}: {self.message}"


class SchemaError(ValueError):
    """A value does not match its schema; `problems` lists every failing field."""

    def __init__(self, problems: list[SchemaProblem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def _short(message: str) -> str:
    """A validation message cut to a readable length (an `enum` of the schema can be huge)."""
    return message if len(message) <= _MESSAGE_LENGTH else message[: _MESSAGE_LENGTH - 3] + "..."


def _dotted(parts: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(p) for p in parts)


class Schema:
    """A validator built from a pydantic model, a Python type or a JSON Schema dict.

    No JSON Schema ever retrieves anything: a `$ref` that does not resolve inside the schema
    fails validation. `Schema.from_document` makes the validator of an untrusted schema (one
    a workflow document supplies): `check` also refuses references outside it and patterns
    RE2 cannot run, patterns are matched in linear time, and the CPU time of validating counts
    against the workflow run's budget (`noetic.workflows.document_schema`).
    """

    def __init__(self, spec: Any, *, untrusted: bool = False):
        self.spec = spec
        self.untrusted = untrusted

    @classmethod
    def from_document(cls, spec: Any) -> Schema:
        """The validator of a JSON Schema dict from an untrusted document."""
        return cls(spec, untrusted=True)

    @classmethod
    def of(cls, spec: Any) -> Schema:
        """Wrap `spec` (returned unchanged when it already is a `Schema`)."""
        return spec if isinstance(spec, Schema) else cls(spec)

    @property
    def is_model(self) -> bool:
        """True when the schema is a pydantic model class."""
        return isinstance(self.spec, type) and issubclass(self.spec, BaseModel)

    @property
    def is_json_schema(self) -> bool:
        """True when the schema is a JSON Schema dict."""
        return isinstance(self.spec, Mapping)

    @cached_property
    def _adapter(self) -> TypeAdapter[Any]:
        from pydantic import TypeAdapter  # its module is 2.6 M instructions; model schemas never need it

        return TypeAdapter(self.spec)

    @cached_property
    def _json_validator(self) -> Any:
        from jsonschema import Draft202012Validator
        from jsonschema.validators import validator_for
        from referencing import Registry

        validator_cls = validator_for(self.spec, default=Draft202012Validator)
        validator_cls.check_schema(self.spec)
        if self.untrusted:
            from noetic.workflows.document_schema import document_validator_class

            validator_cls = document_validator_class(validator_cls)
        # An empty registry: references resolve inside the schema or not at all (jsonschema's
        # default would fetch URLs and files, with no timeout).
        return validator_cls(self.spec, registry=Registry())

    def check(self) -> None:
        """Raise `SchemaError` now if a JSON Schema dict is itself invalid (for an untrusted
        schema, also if it refers outside itself or has a pattern RE2 cannot run)."""
        if self.is_json_schema:
            from jsonschema.exceptions import SchemaError as JsonSchemaError

            if self.untrusted:
                from noetic.workflows.document_schema import schema_problems

                problems = schema_problems(self.spec)
                if problems:
                    raise SchemaError([SchemaProblem(path, message) for path, message in problems])
            try:
                self._json_validator  # noqa: B018 - builds and checks the validator
            except JsonSchemaError as exc:
                raise SchemaError([SchemaProblem(_dotted(list(exc.path)), _short(exc.message))]) from exc
            except RecursionError:
                raise SchemaError([SchemaProblem("", "the schema nests too deeply")]) from None

    def _sorted_errors(self, value: Any) -> list[Any]:
        errors = islice(self._json_validator.iter_errors(value), _MAX_PROBLEMS)
        return sorted(errors, key=lambda e: [str(p) for p in e.path])

    def _json_errors(self, value: Any) -> list[Any]:
        from referencing.exceptions import Unresolvable

        try:
            if self.untrusted:
                from noetic.workflows.document_schema import metered_validation

                with metered_validation():
                    return self._sorted_errors(value)
            return self._sorted_errors(value)
        except Unresolvable as exc:
            ref = getattr(exc, "ref", "")
            raise SchemaError(
                [
                    SchemaProblem(
                        "", f"the schema's reference {ref!r} does not resolve inside it (nothing is fetched)"
                    )
                ]
            ) from None
        except RecursionError:
            raise SchemaError(
                [SchemaProblem("", "the schema or the value nests too deeply to validate")]
            ) from None

    def validate(self, value: Any) -> Any:
        """The validated value, or `SchemaError` naming every failing field."""
        if self.is_json_schema:
            errors = self._json_errors(value)
            if errors:
                raise SchemaError([SchemaProblem(_dotted(list(e.path)), _short(e.message)) for e in errors])
            return value
        try:
            if self.is_model:
                return self.spec.model_validate(value)
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            raise SchemaError(
                [SchemaProblem(_dotted(e["loc"]), e["msg"]) for e in exc.errors(include_url=False)]
            ) from None

    def validate_json(self, text: str) -> Any:
        """Parse a JSON string and validate it (a parse error is a `SchemaError` too)."""
        if self.is_model:
            try:
                return self.spec.model_validate_json(text)
            except ValidationError as exc:
                raise SchemaError(
                    [SchemaProblem(_dotted(e["loc"]), e["msg"]) for e in exc.errors(include_url=False)]
                ) from None
        import json  # on first use: `import json` compiles its regexes (5 M instructions)

        try:
            value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise SchemaError([SchemaProblem("", f"not valid JSON ({exc.msg} at {exc.pos})")]) from None
        except RecursionError:  # Python's parser recurses once per nested array or object
            raise SchemaError([SchemaProblem("", "the JSON nests too deeply to parse")]) from None
        return self.validate(value)

    @cached_property
    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of this schema (the dict itself for a JSON Schema)."""
        if self.is_json_schema:
            return dict(self.spec)
        if self.is_model:
            schema: dict[str, Any] = self.spec.model_json_schema()
            return schema
        return self._adapter.json_schema()

    def describes_object(self) -> bool:
        """True when values of this schema are JSON objects."""
        return self.json_schema.get("type") == "object" or "properties" in self.json_schema

    def property_names(self) -> set[str]:
        """The top-level property names the schema declares."""
        return set(self.json_schema.get("properties", {}))


def to_jsonable(value: Any) -> Any:
    """A JSON-ready form of a step value (pydantic models are dumped)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value
