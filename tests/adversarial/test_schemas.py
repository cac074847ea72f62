"""Hostile JSON Schemas in a document's `customItems`: nothing is ever retrieved, patterns
cannot backtrack, and validation of large values stays linear."""

from __future__ import annotations

import json

SECRET = "db-password-from-a-local-file"


def item_document(output_schema: dict, emitted: str) -> dict:
    """A document whose compute node emits one `t:item` final item from `emitted` (JSONata)."""
    return {
        "version": 1,
        "customItems": {"thing": {"type": "t:item", "output": output_schema}},
        "root": {
            "kind": "compute",
            "id": "c",
            "expr": "$",
            "emitItems": {"item": "thing", "onDone": emitted},
        },
    }


RUN_DOCUMENT = """
import json
import noetic as nt
from noetic.testing import ScriptedModel

DOC = json.loads({doc!r})

async def main():
    flow = nt.workflow("w", DOC)
    async with nt.AgentHarness("t", agent_graph=flow, model=ScriptedModel.echo()) as h:
        return (await h.run("go")).output
"""


def run_document(child, doc: dict, **limits: float):
    return child.run(RUN_DOCUMENT.format(doc=json.dumps(doc)), **limits)


def test_a_ref_to_a_local_server_is_never_fetched(child):
    outcome = child.run(
        f"""
        import json, threading
        from http.server import BaseHTTPRequestHandler, HTTPServer
        import noetic as nt

        hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                hits.append(self.path)
                body = json.dumps({{"enum": [{SECRET!r}]}}).encode()
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        async def main():
            server = HTTPServer(("127.0.0.1", 0), Handler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            url = f"http://127.0.0.1:{{server.server_port}}/secret.json"
            doc = {{
                "version": 1,
                "customItems": {{"thing": {{"type": "t:item", "output": {{
                    "type": "object", "properties": {{"x": {{"$ref": url}}}}}}}}}},
                "root": {{"kind": "compute", "id": "c", "expr": "$",
                          "emitItems": {{"item": "thing", "onDone": "{{'x': 'x'}}"}}}},
            }}
            try:
                nt.workflow("w", doc)
            except nt.NoeticError as exc:
                return {{"code": exc.code, "message": exc.message, "hits": hits}}
            finally:
                server.shutdown()
            return {{"hits": hits}}
        """,
        wall_clock=30,
    )
    result = outcome.returned()
    assert result["hits"] == []
    assert result.get("code") == "INVALID_CUSTOM_ITEM_OUTPUT", result
    assert "points outside the schema" in result["message"]
    assert SECRET not in result["message"]


def test_a_file_ref_is_refused_by_validate_and_by_run(child):
    secret = child.write("secret.json", json.dumps({"enum": [SECRET]}))
    schema = {"type": "object", "properties": {"x": {"$ref": secret.as_uri()}}}
    doc = child.write("doc.json", json.dumps(item_document(schema, "{'x': 'x'}")))
    validated = child.cli("validate", str(doc))
    assert validated.returncode == 2, validated.describe()
    assert "points outside the schema" in validated.stderr
    ran = child.cli("run", str(doc))
    assert ran.returncode == 2, ran.describe()
    for text in (validated.stdout, validated.stderr, ran.stdout, ran.stderr):
        assert SECRET not in text
        assert "Traceback" not in text


def test_a_catastrophic_pattern_does_not_hang(child):
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a+)+$"}}}
    doc = item_document(schema, "{'x': $pad('', 40, 'a') & '!'}")
    message = run_document(child, doc, wall_clock=30).raised("INVALID_CUSTOM_ITEM")
    assert "does not match" in message


def test_a_catastrophic_pattern_property_does_not_hang(child):
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "string"}},
        "additionalProperties": False,
    }
    doc = item_document(schema, "{$pad('', 40, 'a') & '!': 'v'}")
    message = run_document(child, doc, wall_clock=30).raised("INVALID_CUSTOM_ITEM")
    assert "additional properties" in message


def test_a_pattern_needing_backtracking_is_refused_when_the_document_is_checked(child):
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a)\\1$"}}}
    doc = child.write("doc.json", json.dumps(item_document(schema, "{'x': 'aa'}")))
    finished = child.cli("validate", str(doc))
    assert finished.returncode == 2, finished.describe()
    assert "RE2" in finished.stderr


def test_unique_items_over_many_objects_is_linear(child):
    schema = {"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True}}}
    doc = item_document(schema, "{'xs': [1..20000].{'v': $}}")
    # building the array is ~0.3-0.5 s of JSONata, too close to the default 500 ms per expression
    snippet = RUN_WITH_LIMITS.format(
        doc=json.dumps(doc), limits="expressions=ExpressionLimits(timeout_ms=5_000)"
    )
    assert child.run(snippet, wall_clock=30).returned() == {"n": 0}


def test_a_reference_cycle_fails_the_item_instead_of_crashing(child):
    # found attacking the fix: a schema that refers to itself recurses until Python gives up
    schema = {"type": "object", "allOf": [{"$ref": "#"}]}
    message = run_document(child, item_document(schema, "{'x': 1}"), wall_clock=30).raised(
        "INVALID_CUSTOM_ITEM"
    )
    assert "nests too deeply" in message


def nested_any_of(levels: int, ways: int) -> dict:
    """An object schema whose `v` is `levels` levels of `ways`-way `anyOf` over `$defs`: a few
    kilobytes that expand to `ways ** levels` subschemas."""
    defs: dict = {f"L{levels}": {"type": "object", "required": ["nope"]}}
    for level in range(levels - 1, -1, -1):
        defs[f"L{level}"] = {"anyOf": [{"$ref": f"#/$defs/L{level + 1}"}] * ways}
    return {"type": "object", "$defs": defs, "properties": {"v": {"$ref": "#/$defs/L0"}}}


def test_a_schema_expanding_to_millions_is_refused_by_validate_and_run(child):
    # found by a fresh-eyes run: this 2 KB schema took 67 s and 3.3 GB to check one item
    doc = child.write("doc.json", json.dumps(item_document(nested_any_of(6, 10), "{'v': {'z': 1}}")))
    for command in ("validate", "run"):
        finished = child.cli(command, str(doc), wall_clock=30)
        assert finished.returncode == 2, finished.describe()
        assert "Traceback" not in finished.stderr
        assert "$.customItems.thing.output: [WORKFLOW_VALIDATION_FAILED]" in finished.stderr
        assert "WorkflowLimits.max_schema_size" in finished.stderr
        assert "UNKNOWN_CUSTOM_ITEM" not in finished.stderr  # the refused item is not "declared nowhere"


RUN_WITH_LIMITS = """
import json
import noetic as nt
from noetic.testing import ScriptedModel
from noetic.workflows.limits import ExpressionLimits, WorkflowLimits

DOC = json.loads({doc!r})

async def main():
    flow = nt.workflow("w", DOC, limits=WorkflowLimits({limits}))
    async with nt.AgentHarness("t", agent_graph=flow, model=ScriptedModel.echo()) as h:
        return (await h.run({{"n": 0}})).output
"""


def test_validating_items_in_a_loop_counts_toward_the_run_cpu_budget(child):
    # found by a fresh-eyes run: 0.27 s of validation per iteration, never counted
    # the value matches only the last branch, so every check tries all 3,000 (≈ 65 ms)
    branches = [{"type": "object", "required": [f"k{i}"]} for i in range(2999)] + [{"required": ["z"]}]
    schema = {"type": "object", "properties": {"v": {"anyOf": branches}}}
    doc = {
        "version": 1,
        "customItems": {"thing": {"type": "t:item", "output": schema}},
        "root": {
            "kind": "loop",
            "id": "l",
            "maxIterations": "infinity",
            "body": {
                "kind": "compute",
                "id": "c",
                "expr": "{'n': n + 1}",
                "emitItems": {"item": "thing", "onDone": "{'v': {'z': 1}}"},
            },
            # 20 iterations: their expressions take a few ms in all, far under the budget,
            # so only the validations can take the run past it
            "until": {"kind": "expr", "expr": "n >= 20"},
        },
    }
    snippet = RUN_WITH_LIMITS.format(doc=json.dumps(doc), limits="max_run_cpu_ms=300")
    message = child.run(snippet, wall_clock=60).raised("LIMIT_EXCEEDED")
    # whichever evaluation happens to cross the line names itself: almost always a validation
    assert "past 300 ms of CPU time in total (WorkflowLimits.max_run_cpu_ms)" in message


def test_a_recursive_schema_is_stopped_in_the_middle_of_one_value(child):
    # each level tries both branches, each of which descends: 2 ** 24 walks for one value
    branch = {"properties": {"x": {"$ref": "#/$defs/a"}}, "type": "object"}
    schema = {
        "type": "object",
        "$defs": {"a": {"anyOf": [branch, dict(branch)]}},
        "properties": {"v": {"$ref": "#/$defs/a"}},
    }
    value = "1"
    for _ in range(24):
        value = "{'x': " + value + "}"
    doc = item_document(schema, "{'v': " + value + "}")
    snippet = RUN_WITH_LIMITS.format(doc=json.dumps(doc), limits="max_run_cpu_ms=500")
    message = child.run(snippet, wall_clock=60).raised("LIMIT_EXCEEDED")
    assert "validating a value against a schema of the document" in message


def test_a_schema_hidden_under_a_property_named_default_is_measured_too(child):
    # found by a review: the size walk skipped `default` even as a property name
    inner = json.loads(json.dumps(nested_any_of(6, 10)).replace("#/$defs/", "#/properties/default/$defs/"))
    hidden = {"type": "object", "properties": {"default": inner}}
    doc = child.write("doc.json", json.dumps(item_document(hidden, "{'default': {'v': 1}}")))
    finished = child.cli("validate", str(doc), wall_clock=30)
    assert finished.returncode == 2, finished.describe()
    assert "WorkflowLimits.max_schema_size" in finished.stderr


def test_a_draft_07_schema_of_id_anchors_is_measured_too(child):
    # found by a review: `$id: "#L1"` was taken for a new resource and its `$ref`s counted nothing
    defs: dict = {"L6": {"$id": "#L6", "type": "object", "required": ["nope"]}}
    for level in range(5, -1, -1):
        defs[f"L{level}"] = {"$id": f"#L{level}", "anyOf": [{"$ref": f"#L{level + 1}"}] * 10}
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": defs,
        "properties": {"v": {"$ref": "#L0"}},
    }
    doc = child.write("doc.json", json.dumps(item_document(schema, "{'v': {'z': 1}}")))
    finished = child.cli("validate", str(doc), wall_clock=30)
    assert finished.returncode == 2, finished.describe()
    assert "WorkflowLimits.max_schema_size" in finished.stderr


def test_a_large_enum_over_a_long_array_is_stopped_in_the_middle_of_one_value(child):
    # found by a review: `enum` was not metered, so items x members ran unchecked to the end
    # (this one is about 20 s of CPU unmetered; the wall clock would end it first). The array
    # stays short enough that building it (~0.1 s of JSONata) leaves the budget to validation.
    members = list(range(60_000))
    schema = {"type": "object", "properties": {"v": {"type": "array", "items": {"enum": members}}}}
    doc = item_document(schema, "{'v': [1..3000].($ * 0 + 59999)}")
    snippet = RUN_WITH_LIMITS.format(doc=json.dumps(doc), limits="max_run_cpu_ms=300")
    message = child.run(snippet, wall_clock=30).raised("LIMIT_EXCEEDED")
    assert "validating a value against a schema of the document" in message
