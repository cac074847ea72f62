"""The published JSON Schema: generated from the models, committed, current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from noetic.workflows.document import NODE_KINDS, UNSUPPORTED_KINDS, UNTIL_KINDS
from noetic.workflows.schema import SCHEMA_PATH, generate_schema, published_schema, schema_text

HERE = Path(__file__).resolve().parent
DOCUMENTS = [
    *sorted((HERE.parents[2] / "examples").glob("*.json")),
    *sorted(p for p in (HERE / "corpus").glob("*.json") if p.name != "manifest.json"),
]
MANIFEST: dict[str, Any] = json.loads((HERE / "corpus" / "manifest.json").read_text())


def test_the_committed_schema_is_current() -> None:
    """Drift gate: regenerate with `uv run python -m noetic.workflows.schema` after a model change."""
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(generate_schema())


def test_it_is_a_valid_draft_2020_12_schema_with_a_stable_id() -> None:
    schema = published_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "urn:noetic:python:noetic-workflow:1"


def test_it_covers_exactly_the_runtime_node_and_until_kinds() -> None:
    defs = published_schema()["$defs"]
    kinds = [d["properties"]["kind"] for d in defs.values() if "kind" in d.get("properties", {})]
    consts = {k["const"] for k in kinds if "const" in k}  # a decide question's `kind` is an enum
    assert consts == set(NODE_KINDS) | set(UNTIL_KINDS)
    assert not consts & set(UNSUPPORTED_KINDS)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_documents_validate_against_it_unless_they_use_an_unsupported_kind(path: Path) -> None:
    errors = list(Draft202012Validator(published_schema()).iter_errors(json.loads(path.read_text())))
    rejected = MANIFEST.get(path.name, {}).get("error") == "UNSUPPORTED_NODE_KIND"
    assert bool(errors) == rejected, [e.message for e in errors]


def test_the_schema_rejects_what_the_model_rejects() -> None:
    validator = Draft202012Validator(published_schema())
    both = {
        "version": 1,
        "root": {
            "kind": "inParallel",
            "id": "p",
            "mode": "all",
            "paths": [{"kind": "compute", "id": "c", "expr": "1"}],
            "each": {"kind": "compute", "id": "c", "expr": "1"},
        },
    }
    typo = {"version": 1, "root": {"kind": "compute", "id": "c", "expresion": "1"}}
    assert not validator.is_valid(both)
    assert not validator.is_valid(typo)
