"""docs/workflow-schema.md is generated from the published workflow schema and is current."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from noetic.workflows.schema import SCHEMA_PATH

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "workflow_schema_reference", ROOT / "scripts" / "workflow_schema_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_is_what_the_schema_generates() -> None:
    generator = _generator()
    expected = generator.render(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    committed = (ROOT / "docs" / "workflow-schema.md").read_text(encoding="utf-8")
    assert committed == expected, "run: scripts/bootstrap.sh python scripts/workflow_schema_reference.py"


def test_the_reference_has_a_section_for_every_definition_and_field() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    page = _generator().render(schema)
    for name, definition in schema["$defs"].items():
        assert f"### {name}\n" in page
        for field in definition.get("properties", {}):
            assert f"| `{field}` |" in page, (name, field)


def test_a_schema_change_changes_the_page() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    generator = _generator()
    before = generator.render(schema)
    schema["$defs"]["ComputeNode"]["properties"]["budget"] = {"type": "integer", "description": "new"}
    assert "| `budget` | `integer` | optional | new |" in generator.render(schema)
    assert generator.render(schema) != before


def test_alternatives_and_predicates_read_as_they_are_meant() -> None:
    page = _generator().render(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    assert "Exactly one of `paths` or `each`." in page
    assert "Exactly one of `document` or `ref`." in page
    assert "| `until` | a [predicate](#loop-predicates-until) | yes |" in page
    assert (
        "| `predicates` | list of [predicates](#loop-predicates-until) | yes | at least one entry |" in page
    )
    assert "| `steps` | list of [nodes](#nodes) |" in page
