"""Compatibility with the TypeScript Noetic: a corpus of documents written from its published
schema's node definitions (every node kind and every until kind it defines). Each one either
loads and runs here or is rejected with the documented config error for an unsupported kind.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import noetic as nt
import pytest

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).resolve().parent / "corpus"
MANIFEST: dict[str, dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text())
TS_NODE_KINDS = {
    "callModel",
    "invokeTool",
    "runCode",
    "conditional",
    "inParallel",
    "spawn",
    "withContext",
    "loop",
    "sequence",
    "schedule",
    "subflow",
    "acp-agent",
}
TS_UNTIL_KINDS = {
    "maxSteps",
    "maxCost",
    "maxDuration",
    "noToolCalls",
    "never",
    "outputContains",
    "outputEquals",
    "converged",
    "any",
    "all",
}

lookup = nt.tool(
    "lookup",
    description="Look something up.",
    input={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    execute=lambda args: f"result for {args['query']}",
)


def kinds(value: Any, found: set[str]) -> set[str]:
    if isinstance(value, dict):
        if isinstance(value.get("kind"), str):
            found.add(value["kind"])
        for child in value.values():
            kinds(child, found)
    elif isinstance(value, list):
        for child in value:
            kinds(child, found)
    return found


def test_the_corpus_covers_every_node_and_until_kind_and_every_file_is_listed() -> None:
    found: set[str] = set()
    for path in CORPUS.glob("*.json"):
        if path.name != "manifest.json":
            kinds(json.loads(path.read_text()), found)
    assert found >= TS_NODE_KINDS | TS_UNTIL_KINDS
    assert {p.name for p in CORPUS.glob("*.json")} - {"manifest.json"} == set(MANIFEST)


def build(name: str) -> nt.Step:
    workflows = {ref: CORPUS / file for ref, file in MANIFEST[name].get("workflows", {}).items()}
    return nt.workflow(Path(name).stem, CORPUS / name, tools=[lookup], workflows=workflows)


@pytest.mark.parametrize("name", sorted(n for n, e in MANIFEST.items() if "error" in e))
def test_unsupported_documents_are_rejected_with_the_documented_code(name: str) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        build(name)
    assert err.value.code == MANIFEST[name]["error"]
    assert err.value.hint


@pytest.mark.parametrize("name", sorted(n for n, e in MANIFEST.items() if "error" not in e))
async def test_supported_documents_load_and_run(name: str, run_graph: Any) -> None:
    expected = MANIFEST[name]
    required = expected.get("requires")
    if required and importlib.util.find_spec(required) is None:
        with pytest.raises(nt.NoeticConfigError) as err:
            build(name)
        assert err.value.code == "UNSUPPORTED_NODE_KIND"
        return
    assert await run_graph(build(name), expected["input"]) == expected["output"]
