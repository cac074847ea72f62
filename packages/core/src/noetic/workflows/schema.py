"""The published JSON Schema (draft 2020-12) of workflow documents.

It is generated from the document models (`noetic.workflows.document`) and committed next to
this module as `noetic-workflow.schema.json`, so it ships in the wheel and editors, CI checks
and planners can validate documents without importing Noetic. A drift test regenerates it and
compares; after changing the models, regenerate it with

    uv run python -m noetic.workflows.schema

`noetic schema` prints it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import CoreSchema

from noetic.workflows.document import WorkflowDocument

__all__ = ["SCHEMA_ID", "SCHEMA_PATH", "generate_schema", "published_schema", "schema_text"]

#: Where the published schema is committed (inside the package, so it ships in the wheel).
SCHEMA_PATH = Path(__file__).with_name("noetic-workflow.schema.json")
#: The schema's stable `$id`.
SCHEMA_ID = "urn:noetic:python:noetic-workflow:1"
_DRAFT = "https://json-schema.org/draft/2020-12/schema"


class _Generator(GenerateJsonSchema):
    """Pydantic's generator without the titles it derives from field names."""

    def field_title_should_be_set(self, schema: CoreSchema) -> bool:
        return False


def generate_schema() -> dict[str, Any]:
    """The schema generated from the document models."""
    generated = WorkflowDocument.model_json_schema(by_alias=True, schema_generator=_Generator)
    return {
        "$schema": _DRAFT,
        "$id": SCHEMA_ID,
        **generated,
        "description": "A Noetic workflow document: a portable, JSON-safe step tree whose expressions "
        "are JSONata. Documents written for the TypeScript Noetic load unchanged, except the node kinds "
        "runCode, schedule and acp-agent, which Noetic for Python does not run.",
    }


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as committed: two-space indented JSON with a final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def published_schema() -> dict[str, Any]:
    """The committed schema."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


if __name__ == "__main__":
    SCHEMA_PATH.write_text(schema_text(generate_schema()), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
