"""The inspector in a real browser: headless Chromium (Debian's) driven by Selenium, against a
real `python -m noetic_inspector` server over a store written by real runs.

Screenshots of each page are saved under the test's temporary directory, or under
`$NOETIC_SCREENSHOTS` when set (how docs/images/ is refreshed).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = pytest.mark.slow


def _open(browser: Any, url: str) -> None:
    browser.get(url)
    WebDriverWait(browser, 15).until(
        lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true"
    )


def _shot(browser: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("NOETIC_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    browser.set_window_size(1280, max(800, browser.execute_script("return document.body.scrollHeight")))
    assert browser.save_screenshot(str(folder / f"inspector-{name}.png"))


def test_the_list_shows_every_execution_with_status_and_cost(
    browser: Any, server: Any, written: Any, tmp_path: Path
) -> None:
    _open(browser, server.url + "/")
    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    texts = {row.find_element(By.CSS_SELECTOR, "a").text: row.text for row in rows}
    assert set(texts) == {written.ok_id, written.failed_id, written.resumed_id}
    assert "completed" in texts[written.ok_id]
    assert "failed" in texts[written.failed_id]
    assert f"${written.ok_cost:.4f}" in texts[written.ok_id]  # cost and billed cost of the run
    _shot(browser, "executions", tmp_path)


def test_the_detail_page_shows_steps_items_and_the_layer_chart_and_runs_no_hostile_script(
    browser: Any, server: Any, written: Any, tmp_path: Path
) -> None:
    original_title = "Execution · Noetic inspector"
    _open(browser, server.url + "/")
    link = browser.find_element(By.LINK_TEXT, written.ok_id).get_attribute("href")
    assert link == f"{server.url}/executions/{written.ok_id}"
    _open(browser, link)
    steps = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "main table tbody tr")]
    assert [line.split()[0] for line in steps] == ["agent", "research", "answer"]
    assert "$0.000730" in steps[1] and "$0.000270" in steps[2]  # per-step costs the store holds
    items = browser.find_elements(By.CSS_SELECTOR, ".item")
    heads = [item.find_element(By.CSS_SELECTOR, ".head").text for item in items]
    assert heads[0] == "user" and heads[1].startswith("tool call lookup")
    outputs = [item.text for item in items if "tool output" in item.text]
    assert written.hostile in outputs[0].replace('\\"', '"')  # the markup is shown as text
    assert browser.execute_script("return window.__pwned") is None  # and never ran
    assert browser.title == original_title
    assert not browser.find_elements(By.CSS_SELECTOR, "main script, main img")
    chart = browser.find_element(By.CSS_SELECTOR, "svg.layer-chart")
    segments = chart.find_elements(By.CSS_SELECTOR, "rect.segment")
    titles = [s.find_element(By.TAG_NAME, "title").get_attribute("textContent") for s in segments]
    assert any(t.startswith("layer glossary") for t in titles)  # the layer's share of the window
    assert all(float(s.get_attribute("width")) > 0 for s in segments)
    assert "re-anchored: cold-start" in chart.text
    _shot(browser, "execution", tmp_path)


def test_a_resumed_execution_marks_its_replayed_steps(browser: Any, server: Any, written: Any) -> None:
    _open(browser, f"{server.url}/executions/{written.resumed_id}")
    steps = {
        row.text.split()[0]: row.text for row in browser.find_elements(By.CSS_SELECTOR, "main table tbody tr")
    }
    assert steps["draft"].endswith("replayed") and steps["report"].endswith("ran")
    assert "attempt2" in browser.find_element(By.CSS_SELECTOR, ".facts").text.replace(" ", "")


def test_the_workflow_graph_draws_every_node(browser: Any, server: Any, tmp_path: Path) -> None:
    _open(browser, server.url + "/workflow")
    graph = browser.find_element(By.CSS_SELECTOR, "svg.workflow-graph")
    labels = [t.text for t in graph.find_elements(By.CSS_SELECTOR, "text") if "·" in t.text]
    assert "sequence · batch" in labels and "loop · process" in labels
    assert graph.find_elements(By.CSS_SELECTOR, "path.edge.repeat")
    _shot(browser, "workflow", tmp_path)


def test_a_live_run_streams_its_events_to_the_page(browser: Any, server: Any, tmp_path: Path) -> None:
    _open(browser, server.url + "/live")
    WebDriverWait(browser, 10).until(lambda b: b.execute_script("return document.readyState") == "complete")
    time.sleep(0.3)  # the EventSource connects

    async def run() -> None:
        tool = nt.tool(
            "shout", description="Shout.", input={"type": "object"}, execute=lambda a: "<b>HEY</b>"
        )
        model = ScriptedModel([tool_call_reply("shout", {}), text_reply("live answer")])
        agent = nt.call_model("live-agent", tools=[tool])
        async with nt.AgentHarness("live", agent_graph=agent, model=model, inspect=server.url) as h:
            await h.run("go")
            assert h.inspect_sink is not None
            assert await anyio.to_thread.run_sync(h.inspect_sink.flush)

    anyio.run(run)
    WebDriverWait(browser, 15).until(
        lambda b: "live:turn_completed" in b.find_element(By.CSS_SELECTOR, "table.live-events").text
    )
    text = browser.find_element(By.CSS_SELECTOR, "table.live-events").text
    assert "live:step_started" in text and "<b>HEY</b>" in text.replace('\\"', '"')
    assert "live answer" in text
    _shot(browser, "live", tmp_path)


def test_an_execution_that_ran_a_workflow_draws_it_on_its_page(
    browser: Any, server_type: Any, tmp_path: Path
) -> None:
    document = {
        "version": 1,
        "root": {
            "kind": "sequence",
            "id": "flow",
            "steps": [
                {"kind": "compute", "id": "double", "expr": "$ * 2"},
                {"kind": "compute", "id": "half", "expr": "$ / 2"},
            ],
        },
    }
    url = f"sqlite:///{tmp_path / 'flow.db'}"

    async def run() -> None:
        async with nt.AgentHarness("flows", agent_graph=nt.workflow("flow", document), storage=url) as h:
            await h.run(21, execution_id="flowed")

    anyio.run(run)
    served = server_type([url])
    try:
        _open(browser, f"{served.url}/executions/flowed")
        graph = browser.find_element(By.CSS_SELECTOR, "svg.workflow-graph")
        labels = [t.text for t in graph.find_elements(By.CSS_SELECTOR, "text") if "·" in t.text]
    finally:
        served.stop()
    assert labels == ["sequence · flow", "compute · double", "compute · half"]
