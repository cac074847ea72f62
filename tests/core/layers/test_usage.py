"""The LastLayerUsage snapshot, its table and `noetic context` (LU-1..LU-4, CTX-7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from noetic.cli import main
from noetic.layers import ContextLayer, LayerContext, render_layer_usage
from noetic.testing import ScriptedModel, text_reply
from noetic.tokens import estimate_text
from noetic.usage import LastLayerUsage


class Named(ContextLayer):
    slot = 100

    def __init__(self, id: str, slot: int):
        self.id, self.slot = id, slot

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"<{self.id}>{'x' * 40}</{self.id}>"


def shout(args: dict[str, Any]) -> str:
    return "ok"


TOOL = nt.tool("shout", description="Shout.", input={"type": "object"}, execute=shout)


def layered_agent() -> nt.AgentHarness:
    return nt.AgentHarness(
        "h",
        agent_graph=nt.call_model("a", instructions="Be brief.", tools=[TOOL]),
        model=ScriptedModel([text_reply("first"), text_reply("second")]),
        layers=[Named("zeta", 100), Named("alpha", 300), Named("mid", 200)],
    )


@pytest.mark.anyio
async def test_lu_1_2_4_layers_sorted_by_id_and_the_total_is_the_sum() -> None:
    """Acceptance 40 / LU-1: layers sorted by id; total = layers + system + tools + history;
    LU-2: token_count is the self-reported recall figure; LU-4: it is on the response too."""
    async with layered_agent() as h:
        await h.run("question")
        response = await h.run("follow-up")
    usage = response.last_layer_usage
    assert usage is not None
    assert [e.layer_id for e in usage.layers] == ["alpha", "mid", "zeta"]
    assert usage.total_used_tokens == (
        sum(e.token_count for e in usage.layers)
        + usage.system_prompt_tokens
        + usage.tools_tokens
        + usage.history_tokens
    )
    assert usage.system_prompt_tokens == estimate_text("Be brief.")
    assert usage.tools_tokens > 0
    entry = usage.layers[0]
    assert entry.token_count == estimate_text(f"<alpha>{'x' * 40}</alpha>")
    assert entry.items[0].text == f"<alpha>{'x' * 40}</alpha>"  # type: ignore[union-attr]
    assert usage.execution_id == response.execution_id
    assert usage.model_id == "scripted"
    assert usage.epoch is not None
    assert usage.epoch.age == 2


@pytest.mark.anyio
async def test_ctx_7_no_usage_before_a_successful_model_call() -> None:
    """CTX-7: None until the first successful model call; the run_code step sees it after."""
    seen: list[Any] = []
    graph = nt.sequence(
        "g",
        [
            nt.run_code("before", lambda v, ctx: seen.append(ctx.last_layer_usage)),
            nt.call_model("a"),
            nt.run_code("after", lambda v, ctx: seen.append(ctx.last_layer_usage)),
        ],
    )
    async with nt.AgentHarness(
        "h", agent_graph=graph, model=ScriptedModel.echo(), layers=[Named("n", 1)]
    ) as h:
        await h.run("hi")
    assert seen[0] is None
    assert isinstance(seen[1], LastLayerUsage)


@pytest.mark.anyio
async def test_the_table_shows_each_layer_and_the_buckets() -> None:
    """`render_layer_usage`: a row per layer with tokens, placement, served, churn; the buckets;
    the epoch line with the re-anchor reason."""
    async with layered_agent() as h:
        response = await h.run("question")
    assert response.last_layer_usage is not None
    table = render_layer_usage(response.last_layer_usage)
    lines = table.splitlines()
    assert lines[1].split() == ["layer", "tokens", "placement", "served", "changed", "churn", "rebill"]
    tokens = estimate_text(f"<alpha>{'x' * 40}</alpha>")
    assert lines[2].split()[:4] == ["alpha", str(tokens), "anchor", "fresh"]
    assert any(line.split()[0] == "total" for line in lines)
    assert lines[-1].startswith("epoch t:default#0: age 1")
    assert "re-anchored: cold-start" in lines[-1]


def test_the_table_without_layers_or_epoch() -> None:
    """A snapshot with no layers and anchoring off says so."""
    usage = LastLayerUsage(execution_id="e", model_id="m", system_prompt_tokens=3, total_used_tokens=3)
    table = render_layer_usage(usage)
    assert "(no context layers)" in table
    assert "anchoring is off" in table


agent = nt.call_model("a", instructions="Be brief.")


def test_noetic_context_runs_a_target_and_reads_back_its_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`noetic context module:attr --layers scratchpad --json` runs one offline turn; the JSON
    it prints is a snapshot `noetic context --snapshot` renders as the table."""
    target = f"{__name__}:agent"
    status = main(["context", target, "--input", "hello", "--layers", "scratchpad", "--json"])
    out = capsys.readouterr().out
    assert status == 0
    data = json.loads(out)
    assert data["model_id"] == "scripted:echo"
    assert data["layers"] == []
    saved = tmp_path / "usage.json"
    saved.write_text(json.dumps({"last_layer_usage": data}), encoding="utf-8")
    assert main(["context", "--snapshot", str(saved)]) == 0
    table = capsys.readouterr().out
    assert "context of execution" in table
    assert "system" in table


def test_noetic_context_argument_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """No target and no snapshot, a missing file, a bad target: exit 2 with a message."""
    assert main(["context"]) == 2
    assert main(["context", "--snapshot", str(tmp_path / "missing.json")]) == 2
    assert main(["context", "json:dumps"]) == 2
    err = capsys.readouterr().err
    assert err.count("noetic context:") == 3


def test_noetic_context_runs_a_workflow_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A document path is run as a workflow; the table shows its model call's buckets."""
    document = tmp_path / "doc.json"
    document.write_text(
        json.dumps({"version": 1, "root": {"kind": "callModel", "id": "a", "instructions": "Be brief."}}),
        encoding="utf-8",
    )
    assert main(["context", str(document), "--input", "hello"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("(model scripted:echo)")
    assert [line.split()[:2] for line in lines if line.strip().startswith("system")] == [
        ["system", str(estimate_text("Be brief."))]
    ]
