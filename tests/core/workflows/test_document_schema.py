"""Schemas from documents (issue 18 items 2 and 3): nothing is retrieved, references stay inside
the schema, patterns run on RE2, `uniqueItems` is linear."""

from __future__ import annotations

import noetic as nt
import pytest
from noetic.errors import NoeticError
from noetic.schema import Schema, SchemaError
from noetic.workflows.document_schema import equality_key, schema_problems


def test_no_schema_retrieves_a_reference_not_even_a_trusted_one(tmp_path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"enum": ["the-secret"]}')
    trusted = Schema({"type": "object", "properties": {"x": {"$ref": secret.as_uri()}}})
    with pytest.raises(SchemaError, match="does not resolve inside it") as info:
        trusted.validate({"x": "nope"})
    assert "the-secret" not in str(info.value)


def test_local_references_still_work() -> None:
    schema = Schema.from_document(
        {"$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}}
    )
    schema.check()
    assert schema.validate({"x": 1}) == {"x": 1}
    with pytest.raises(SchemaError, match="is not of type 'integer'"):
        schema.validate({"x": "one"})


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"properties": {"x": {"$ref": "https://example.com/s.json"}}}, "points outside the schema"),
        ({"properties": {"x": {"$dynamicRef": "file:///etc/passwd"}}}, "points outside the schema"),
        ({"properties": {"x": {"pattern": "(?=a)b"}}}, "RE2"),
        ({"patternProperties": {"(a)\\1": {}}}, "RE2"),
        ({"patternProperties": {"^a": {}}, "unevaluatedProperties": False}, "unevaluatedProperties"),
    ],
)
def test_a_document_schema_is_refused_for(schema: dict, message: str) -> None:
    problems = schema_problems(schema)
    assert problems
    assert message in problems[0][1]
    with pytest.raises(SchemaError, match=message):
        Schema.from_document({"type": "object", **schema}).check()


def test_patterns_match_like_json_schema_searches() -> None:
    schema = Schema.from_document(
        {
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "[0-9]{3}"}},
            "patternProperties": {"^x-": {"type": "integer"}},
            "additionalProperties": False,
        }
    )
    assert schema.validate({"code": "ab123", "x-a": 1}) == {"code": "ab123", "x-a": 1}
    with pytest.raises(SchemaError) as info:
        schema.validate({"code": "ab", "x-a": "one", "other": 1})
    text = str(info.value)
    assert "does not match" in text
    assert "'other' unexpected" in text
    assert "is not of type 'integer'" in text


def test_a_catastrophic_pattern_answers_at_once() -> None:
    schema = Schema.from_document({"type": "string", "pattern": "^(a+)+$"})
    with pytest.raises(SchemaError, match="does not match"):
        schema.validate("a" * 5000 + "!")


def test_unique_items_compares_deeply_and_ignores_key_order() -> None:
    schema = Schema.from_document({"type": "array", "uniqueItems": True})
    assert len(schema.validate([{"a": 1, "b": 2}, {"a": 2}, 1, "1", True])) == 5
    with pytest.raises(SchemaError, match="non-unique"):
        schema.validate([{"a": 1, "b": 2}, {"b": 2, "a": 1}])
    with pytest.raises(SchemaError, match="non-unique"):
        schema.validate([1, 1.0])
    assert equality_key(True, {}) != equality_key(1, {})


def test_ref_keys_inside_data_keywords_are_data() -> None:
    assert schema_problems({"enum": [{"$ref": "http://x"}], "const": {"$ref": "file:///etc"}}) == []


def test_a_schema_error_stays_short_for_huge_schemas_and_many_failures() -> None:
    with pytest.raises(SchemaError) as info:
        Schema.from_document({"enum": list(range(100_000))}).validate(-1)
    assert len(str(info.value)) <= 400
    with pytest.raises(SchemaError) as info:
        Schema({"type": "array", "items": {"type": "string"}}).validate(list(range(100_000)))
    assert len(info.value.problems) == 50


def test_a_reference_cycle_is_a_schema_error_not_a_crash() -> None:
    for spec in ({"$ref": "#"}, {"allOf": [{"$ref": "#"}]}):
        with pytest.raises(SchemaError, match="nests too deeply"):
            Schema.from_document(spec).validate(1)


def test_ecma_unicode_escapes_are_understood() -> None:
    schema = Schema.from_document({"type": "string", "pattern": "^[\\u00e9\\u0041]+$"})
    schema.check()
    assert schema.validate("éA") == "éA"
    with pytest.raises(SchemaError):
        schema.validate("\\u0041")


@pytest.mark.parametrize("name", ["default", "enum", "const", "examples"])
def test_a_property_named_like_a_data_keyword_is_checked(name: str) -> None:
    schema = {"properties": {name: {"pattern": "(a)\\1"}}, "$defs": {name: {"$ref": "https://x.example/s"}}}
    where = sorted(path for path, _ in schema_problems(schema))
    assert where == [f"/$defs/{name}/$ref", f"/properties/{name}"]
    document = {
        "version": 1,
        "customItems": {"thing": {"type": "t:item", "output": {"properties": {name: {"pattern": "(a)\\1"}}}}},
        "root": {"kind": "compute", "id": "c", "expr": "$"},
    }
    with pytest.raises(NoeticError, match="RE2") as refused:
        nt.workflow("w", document)
    assert "INVALID_CUSTOM_ITEM_OUTPUT" in str(refused.value)


def test_a_property_named_like_a_keyword_is_a_name_not_a_keyword() -> None:
    # a property called `patternProperties` holds a schema, whose keys are not patterns
    schema = {"properties": {"patternProperties": {"type": "string"}}, "unevaluatedProperties": False}
    assert schema_problems(schema) == []
