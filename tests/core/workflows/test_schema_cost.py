"""The expanded size of a document's schema: references count as copies of their targets,
recursion counts once, and `$id` cannot hide a target."""

from __future__ import annotations

from noetic.workflows.schema_cost import expanded_cost


def fan(levels: int, ways: int, **extra: object) -> dict:
    defs: dict = {f"L{levels}": {"type": "object"}}
    for level in range(levels - 1, -1, -1):
        defs[f"L{level}"] = {"anyOf": [{"$ref": f"#/$defs/L{level + 1}"}] * ways, **extra}
    return {"$defs": defs, "$ref": "#/$defs/L0"}


def test_references_multiply_the_size() -> None:
    assert expanded_cost(fan(2, 10), 10**6, 100).size > 100
    assert expanded_cost(fan(6, 10), 10_000, 100).size > 10_000


def test_a_plain_schema_counts_its_objects_once() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    cost = expanded_cost(schema, 10_000, 100)
    assert cost.size == 4  # the schema, its properties map and two property schemas
    assert cost.depth == 3


def test_a_recursive_schema_is_finite() -> None:
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    cost = expanded_cost(tree, 10_000, 100)
    assert cost.size < 10


def test_an_id_cannot_hide_what_a_reference_points_to() -> None:
    # jsonschema would resolve these against the root; a misleading $id must not lose them
    assert expanded_cost(fan(6, 10, **{"$id": "urn:elsewhere"}), 10_000, 100).size > 10_000


def test_anchors_resolve() -> None:
    schema = {
        "$defs": {"big": {"$anchor": "big", "anyOf": [{"type": "string"}] * 50}},
        "items": {"$ref": "#big"},
    }
    assert expanded_cost(schema, 10_000, 100).size > 100


def test_a_long_chain_of_references_is_deep_not_a_recursion_error() -> None:
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(5000)}
    defs["d5000"] = {"type": "string"}
    cost = expanded_cost({"$defs": defs, "$ref": "#/$defs/d0"}, 100_000, 128)
    assert cost.depth > 128


def test_a_property_named_like_a_data_keyword_is_still_a_schema() -> None:
    # `default`, `enum`, `const`, `examples` are data only as keywords, not as names in a map
    for name in ("default", "enum", "const", "examples"):
        hidden = {"properties": {name: {"anyOf": [{"type": "string"}] * 20_000}}}
        assert expanded_cost(hidden, 10_000, 100).size > 10_000, name
    for keyword in ("patternProperties", "$defs", "definitions", "dependentSchemas"):
        hidden = {keyword: {"default": {"anyOf": [{"type": "string"}] * 50}}}
        assert expanded_cost(hidden, 10_000, 100).size > 50, keyword


def test_a_data_keyword_holds_data_even_when_shaped_like_a_schema() -> None:
    schema = {"default": {"anyOf": [{"type": "string"}] * 50}, "properties": {"a": {"enum": [{"x": 1}] * 50}}}
    assert expanded_cost(schema, 10_000, 100).size < 10


def test_an_id_naming_a_fragment_is_an_anchor() -> None:
    # drafts 04 to 07 spell an anchor `$id: "#name"` (draft-04: `id`); a `$ref: "#name"` counts it
    for keyword in ("$id", "id"):
        defs: dict = {"L6": {keyword: "#L6", "type": "string"}}
        for level in range(5, -1, -1):
            defs[f"L{level}"] = {keyword: f"#L{level}", "anyOf": [{"$ref": f"#L{level + 1}"}] * 10}
        schema = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": defs, "$ref": "#L0"}
        assert expanded_cost(schema, 10_000, 100).size > 10_000, keyword
