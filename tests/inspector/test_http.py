"""The inspector over HTTP: what the API reports from a real store, escaping, refused paths,
hosts and writes, the live push endpoint, and the `noetic inspect` command as a subprocess."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from noetic.durable.memory import MemoryCheckpointStore
from noetic.durable.sqlite import SqliteCheckpointStore
from noetic.errors import NoeticError
from noetic_inspector import ReadOnlyStore, create_app, open_store
from noetic_inspector.app import MAX_PUSH


def _client(store: ReadOnlyStore | None, **kwargs: Any) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(store, **kwargs))
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")


async def _rows(url: str) -> dict[str, str]:
    store = SqliteCheckpointStore(url.removeprefix("sqlite:///"))
    try:
        keys = await store.list_prefix("")
        return await store.get_many(keys)
    finally:
        await store.aclose()


@pytest.mark.anyio
async def test_the_list_reports_status_steps_tokens_and_costs_from_the_store(written: Any) -> None:
    async with _client(open_store(written.url)) as client:
        data = (await client.get("/api/executions")).json()
    by_id = {row["execution_id"]: row for row in data["executions"]}
    ok, failed, resumed = by_id[written.ok_id], by_id[written.failed_id], by_id[written.resumed_id]
    assert (ok["status"], failed["status"], resumed["status"]) == ("completed", "failed", "completed")
    assert (ok["attempt"], resumed["attempt"]) == (1, 2)
    assert ok["reason"] is None and "the report service is down" in failed["reason"]
    # as in the HarnessResponse: the execution cost what its draft did; the last attempt paid nothing
    assert Decimal(resumed["totals"]["cost"]) == Decimal("0.0002")
    assert Decimal(resumed["totals"]["billed_cost"]) == 0
    assert ok["steps"] == 3 and ok["thread_id"] == "default"
    assert Decimal(ok["totals"]["cost"]) == Decimal(str(written.ok_cost))
    assert Decimal(ok["totals"]["billed_cost"]) == Decimal(str(written.ok_billed))
    assert ok["totals"]["input_tokens"] == 120 + 160 + 200
    assert ok["started_at"] <= ok["ended_at"]


@pytest.mark.anyio
async def test_the_detail_gives_the_step_tree_items_and_layer_usage(written: Any) -> None:
    async with _client(open_store(written.url)) as client:
        data = (await client.get(f"/api/executions/{written.ok_id}")).json()
    assert [(s["step_id"], s["kind"], s["depth"]) for s in data["steps"]] == [
        ("agent", "sequence", 1),
        ("research", "call_model", 2),
        ("answer", "call_model", 2),
    ]
    costs = [Decimal(s["cost"]) for s in data["steps"]]
    assert costs == [Decimal("0.00100"), Decimal("0.00073"), Decimal("0.00027")]  # two rounds, then one
    assert not any(s["replayed"] for s in data["steps"])
    usage = data["steps"][1]["layer_usage"]
    assert [layer["layer_id"] for layer in usage["layers"]] == ["glossary"]
    assert usage["epoch"]["reanchor_reason"] == "cold-start"
    types = [item["type"] for item in data["items"]]
    assert types == ["message", "function_call", "function_call_output", "message", "message", "message"]
    assert written.hostile in data["items"][2]["output"].replace('\\"', '"')


@pytest.mark.anyio
async def test_pages_carry_no_data_and_forbid_inline_script(written: Any) -> None:
    async with _client(open_store(written.url)) as client:
        for path in ("/", f"/executions/{written.ok_id}", "/workflow", "/live"):
            response = await client.get(path)
            assert response.status_code == 200
            assert written.ok_id not in response.text and "pwned" not in response.text
            policy = response.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "unsafe-inline" not in policy
            assert response.headers["x-content-type-options"] == "nosniff"
        api = await client.get(f"/api/executions/{written.ok_id}")
        assert api.headers["content-type"] == "application/json"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path",
    [
        "/assets/../app.py",
        "/assets/..%2fapp.py",
        "/assets/%2e%2e%2f%2e%2e%2fpyproject.toml",
        "/assets/app.py",
        "/assets/..%5capp.py",
        "/assets/%2fetc%2fpasswd",
    ],
)
async def test_only_shipped_assets_are_served(path: str) -> None:
    async with _client(None) as client:
        assert (await client.get("/assets/inspector.js")).status_code == 200
        response = await client.get(path)
    assert response.status_code == 404
    assert "import" not in response.text and "root:" not in response.text


def test_a_raw_traversal_request_to_the_real_server_is_refused(server: Any) -> None:
    """Clients normalise `..`; a raw request line keeps it."""
    for target in ("/assets/../../../../etc/passwd", "/assets/../reading.py"):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
            conn.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            reply = b""
            while chunk := conn.recv(65536):
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 404"), reply[:80]
        assert b"root:" not in reply and b"open_store" not in reply


@pytest.mark.anyio
async def test_a_foreign_host_header_is_refused() -> None:
    """DNS rebinding: a page on another name that resolves to 127.0.0.1 gets nothing."""
    async with _client(None) as client:
        response = await client.get("/api/executions", headers={"Host": "evil.example"})
    assert response.status_code == 400


@pytest.mark.anyio
async def test_the_inspector_never_writes_the_store(written: Any) -> None:
    before = await _rows(written.url)
    async with _client(open_store(written.url)) as client:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            response = await client.request(method, f"/api/executions/{written.ok_id}")
            assert response.status_code == 405
        await client.get("/api/executions")
        await client.get(f"/api/executions/{written.failed_id}")
    assert await _rows(written.url) == before
    store = open_store(written.url)
    for attempt in (store.set("k", "{}"), store.delete("k"), store.write({"k": "{}"})):
        with pytest.raises(NoeticError) as caught:
            await attempt
        assert caught.value.code == "INSPECTOR_READ_ONLY"


def test_a_missing_sqlite_store_is_refused_not_created(tmp_path: Path) -> None:
    with pytest.raises(NoeticError) as caught:
        open_store(f"sqlite:///{tmp_path / 'absent.db'}")
    assert caught.value.code == "INSPECTOR_STORE_MISSING"
    assert not (tmp_path / "absent.db").exists()


@pytest.mark.anyio
async def test_a_damaged_row_is_a_json_error_not_a_traceback(written: Any) -> None:
    copy = MemoryCheckpointStore()
    rows = await _rows(written.url)
    await copy.write(rows)
    trace_key = next(key for key in rows if ":trace:" in key and written.ok_id in key)
    await copy.set(trace_key, '{"v": 1, "seq": "<script>"}')
    async with _client(ReadOnlyStore(copy)) as client:
        response = await client.get(f"/api/executions/{written.ok_id}")
        missing = await client.get("/api/executions/nobody")
        listed = (await client.get("/api/executions")).json()["executions"]
    statuses = {row["execution_id"]: (row["status"], row["reason"]) for row in listed}
    assert statuses[written.failed_id][0] == "failed"  # the others are still listed
    assert statuses[written.ok_id][0] == "damaged" and trace_key in statuses[written.ok_id][1]
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "CHECKPOINT_CORRUPT"
    assert "Traceback" not in response.text
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "UNKNOWN_EXECUTION"


@pytest.mark.anyio
async def test_the_live_push_takes_only_bounded_json_arrays() -> None:
    async with _client(None) as client:
        form = await client.post("/api/live", content=b"[]", headers={"Content-Type": "text/plain"})
        big = await client.post(
            "/api/live",
            content=b"[" + b" " * (MAX_PUSH + 1) + b"]",
            headers={"Content-Type": "application/json"},
        )
        bad = await client.post(
            "/api/live", content=b'{"a": 1}', headers={"Content-Type": "application/json"}
        )
        deep = await client.post(
            "/api/live", content=b"[" * 100_000, headers={"Content-Type": "application/json"}
        )
        good = await client.post("/api/live", json=[{"type": "x:turn_started", "data": {}}])
    assert (form.status_code, big.status_code, bad.status_code, deep.status_code) == (415, 413, 400, 400)
    assert good.json() == {"accepted": 1}


BATCH = Path(__file__).resolve().parents[2] / "examples" / "batch.json"


def _inspect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    noetic = shutil.which("noetic", path=str(Path(sys.executable).parent))
    assert noetic is not None
    return subprocess.run([noetic, "inspect", *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def test_noetic_inspect_refuses_a_public_host_and_a_missing_store(tmp_path: Path) -> None:
    public = _inspect("sqlite:///runs.db", "--host", "0.0.0.0", cwd=tmp_path)
    missing = _inspect("sqlite:///runs.db", cwd=tmp_path)
    bad_doc = tmp_path / "doc.json"
    bad_doc.write_text('{"version": 1, "root": {"kind": "nope"}}')
    invalid = _inspect("--workflow", str(bad_doc), cwd=tmp_path)
    assert public.returncode == 2 and "refusing to bind '0.0.0.0'" in public.stderr
    assert missing.returncode == 2 and "INSPECTOR_STORE_MISSING" in missing.stderr
    assert invalid.returncode == 2 and "Traceback" not in invalid.stderr
    assert not (tmp_path / "runs.db").exists()


def test_noetic_inspect_port_errors_are_one_line_and_nothing_is_announced(tmp_path: Path) -> None:
    """A port out of range or already in use ends with status 2 and one line, never a traceback,
    and the command never claims to serve an address it could not bind."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = _inspect("--workflow", str(BATCH), "--port", str(taken.getsockname()[1]), cwd=tmp_path)
    high = _inspect("--workflow", str(BATCH), "--port", "99999", cwd=tmp_path)
    negative = _inspect("--workflow", str(BATCH), "--port", "-5", cwd=tmp_path)
    for ran in (busy, high, negative):
        assert ran.returncode == 2 and "Traceback" not in ran.stderr and "serving on" not in ran.stdout
    assert "cannot listen on 127.0.0.1:" in busy.stderr and "in use" in busy.stderr
    assert "'99999' is not a port" in high.stderr and "'-5' is not a port" in negative.stderr


def test_noetic_inspect_port_0_prints_the_port_it_serves(tmp_path: Path) -> None:
    noetic = shutil.which("noetic", path=str(Path(sys.executable).parent))
    assert noetic is not None
    process = subprocess.Popen(
        [noetic, "inspect", "--workflow", str(BATCH), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        announced = process.stdout.readline()
        match = re.search(r"serving on (http://127\.0\.0\.1:(\d+)/)", announced)
        assert match is not None and match.group(2) != "0", announced
        graph = httpx.get(match.group(1) + "api/workflow", timeout=10)
        assert graph.status_code == 200 and graph.json()["nodes"]
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_noetic_inspect_serves_the_store(written: Any, server_type: Any) -> None:
    noetic = shutil.which("noetic", path=str(Path(sys.executable).parent))
    assert noetic is not None
    served = server_type([written.url], command=(noetic, "inspect"))
    try:
        data = httpx.get(served.url + "/api/executions", timeout=5).json()
        assert {row["execution_id"] for row in data["executions"]} == {
            written.ok_id,
            written.failed_id,
            written.resumed_id,
        }
        assert httpx.get(served.url + "/api/workflow", timeout=5).status_code == 404
    finally:
        served.stop()


def test_the_example_run_shows_up_in_noetic_inspect(tmp_path: Path, server_type: Any) -> None:
    """The user's path: run examples/inspected_run.py, then `noetic inspect` its store."""
    example = Path(__file__).resolve().parents[2] / "examples" / "inspected_run.py"
    ran = subprocess.run(
        [sys.executable, str(example), "runs.db"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert "noetic inspect sqlite:///runs.db" in ran.stdout
    noetic = shutil.which("noetic", path=str(Path(sys.executable).parent))
    assert noetic is not None
    served = server_type([f"sqlite:///{tmp_path / 'runs.db'}"], command=(noetic, "inspect"))
    try:
        (row,) = httpx.get(served.url + "/api/executions", timeout=5).json()["executions"]
        detail = httpx.get(f"{served.url}/api/executions/{row['execution_id']}", timeout=5).json()
    finally:
        served.stop()
    assert row["status"] == "completed" and Decimal(row["totals"]["cost"]) == Decimal("0.00100")
    assert [s["step_id"] for s in detail["steps"]] == ["agent", "research", "answer"]
    assert detail["steps"][1]["layer_usage"]["layers"][0]["layer_id"] == "glossary"


DOCUMENT = {
    "version": 1,
    "root": {
        "kind": "sequence",
        "id": "flow",
        "steps": [
            {"kind": "compute", "id": "double", "expr": "$ * 2"},
            {"kind": "compute", "id": "label", "expr": "'<b>' & $string($) & '</b>'"},
        ],
    },
}


@pytest.mark.anyio
async def test_an_execution_that_ran_a_workflow_document_is_drawn_with_it(tmp_path: Path) -> None:
    import noetic as nt

    url = f"sqlite:///{tmp_path / 'flow.db'}"
    async with nt.AgentHarness("flows", agent_graph=nt.workflow("flow", DOCUMENT), storage=url) as h:
        response = await h.run(21, execution_id="flowed")
    assert response.output == "<b>42</b>"
    async with _client(open_store(url)) as client:
        data = (await client.get("/api/executions/flowed")).json()
    nodes = {(node["kind"], node["id"]) for node in data["workflow"]["nodes"]}
    assert nodes == {("sequence", "flow"), ("compute", "double"), ("compute", "label")}
    assert {"kind": "next", "from": "$.root.steps[0]", "to": "$.root.steps[1]"} in data["workflow"]["edges"]
    assert data["workflow_error"] is None


@pytest.mark.anyio
async def test_a_forged_recorded_workflow_is_reported_not_drawn(tmp_path: Path) -> None:
    import noetic as nt

    url = f"sqlite:///{tmp_path / 'flow.db'}"
    async with nt.AgentHarness("flows", agent_graph=nt.workflow("flow", DOCUMENT), storage=url) as h:
        await h.run(1, execution_id="flowed")
    rows = await _rows(url)
    copy = MemoryCheckpointStore()
    await copy.write(rows)
    start = "execution:flowed:start"
    await copy.set(start, rows[start].replace('"kind":"compute"', '"kind":"<script>"', 1))
    async with _client(ReadOnlyStore(copy)) as client:
        data = (await client.get("/api/executions/flowed")).json()
    assert data["workflow"] is None
    assert data["workflow_error"].startswith("UNKNOWN_NODE_KIND")
