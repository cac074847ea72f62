"""The built-in file tools, driven by a ScriptedModel agent: they work on ctx.fs, and every
failure (hostile path, missing file, wrong kind) comes back as a tool error output the model
can read, never as a failed turn (issue 8; tool errors per noetic.tools)."""

from __future__ import annotations

import json
from typing import Any

import noetic as nt
import pytest
from noetic.fs.memory import MemoryFs
from noetic.fs.tools import MAX_READ_CHARS, file_tools
from noetic.items import FunctionCallOutputItem
from noetic.testing import ScriptedModel, text_reply, tool_call_reply


def _outputs(response: nt.HarnessResponse) -> list[dict[str, Any]]:
    return [json.loads(i.output) for i in response.items if isinstance(i, FunctionCallOutputItem)]


@pytest.mark.anyio
async def test_agent_writes_lists_and_reads_files() -> None:
    """write_file, list_dir and read_file round-trip through the harness filesystem."""
    model = ScriptedModel(
        [
            tool_call_reply("write_file", {"path": "notes/todo.md", "content": "- milk\n"}),
            tool_call_reply("write_file", {"path": "notes/todo.md", "content": "- eggs\n", "append": True}),
            tool_call_reply("list_dir", {"path": "notes"}),
            tool_call_reply("read_file", {"path": "./notes//todo.md"}),
            text_reply("done"),
        ]
    )
    agent = nt.call_model("agent", tools=file_tools())
    async with nt.AgentHarness("files", agent_graph=agent, model=model) as h:
        response = await h.run("keep a todo list")
        assert await h.fs.read_text("notes/todo.md") == "- milk\n- eggs\n"
    written, appended, listing, read = _outputs(response)
    assert written == {"path": "notes/todo.md", "chars_written": 7, "appended": False}
    assert appended["appended"] is True
    assert listing == {
        "path": "notes",
        "entries": [{"name": "todo.md", "kind": "file", "size": 14}],
        "truncated": False,
    }
    assert read == {
        "path": "notes/todo.md",
        "content": "- milk\n- eggs\n",
        "total_chars": 14,
        "next_offset": None,
    }
    assert response.text == "done"


@pytest.mark.anyio
async def test_failures_become_tool_error_outputs() -> None:
    """A hostile path, a missing file, a directory read as a file and a file listed as a
    directory each give the model an error naming the code and the path; the turn goes on."""
    fs = MemoryFs()
    await fs.write_text("a.txt", "x")
    await fs.mkdir("d")
    model = ScriptedModel(
        [
            tool_call_reply("read_file", {"path": "../../etc/passwd"}),
            tool_call_reply("write_file", {"path": "/etc/cron.d/x", "content": "evil"}),
            tool_call_reply("read_file", {"path": "missing.txt"}),
            tool_call_reply("read_file", {"path": "d"}),
            tool_call_reply("list_dir", {"path": "a.txt"}),
            tool_call_reply("read_file", {"path": 7}),
            text_reply("recovered"),
        ]
    )
    agent = nt.call_model("agent", tools=file_tools())
    async with nt.AgentHarness("files", agent_graph=agent, model=model, fs=fs) as h:
        response = await h.run("go")
    errors = [o["error"] for o in _outputs(response)]
    assert errors[0].startswith("[PATH_ESCAPE]")
    assert "'../../etc/passwd'" in errors[0]
    assert errors[1].startswith("[PATH_ESCAPE]")
    assert "'/etc/cron.d/x'" in errors[1]
    assert errors[2].startswith("[FILE_NOT_FOUND]")
    assert "'missing.txt'" in errors[2]
    assert errors[3].startswith("[IS_A_DIRECTORY]")
    assert "'d'" in errors[3]
    assert errors[4].startswith("[NOT_A_DIRECTORY]")
    assert "'a.txt'" in errors[4]
    assert "invalid arguments" in errors[5]
    assert response.text == "recovered"
    assert [e.path for e in await fs.list_dir()] == ["a.txt", "d"]


@pytest.mark.anyio
async def test_long_files_are_paged() -> None:
    """read_file returns at most `limit` characters and the offset to continue from."""
    fs = MemoryFs()
    await fs.write_text("big.txt", "abcdefghij")
    model = ScriptedModel(
        [
            tool_call_reply("read_file", {"path": "big.txt", "limit": 4}),
            tool_call_reply("read_file", {"path": "big.txt", "offset": 8, "limit": 4}),
            text_reply("ok"),
        ]
    )
    async with nt.AgentHarness(
        "p", agent_graph=nt.call_model("a", tools=file_tools()), model=model, fs=fs
    ) as h:
        first, last = _outputs(await h.run("read"))
    assert (first["content"], first["next_offset"], first["total_chars"]) == ("abcd", 4, 10)
    assert (last["content"], last["next_offset"]) == ("ij", None)


def test_read_only_set_and_schemas() -> None:
    """file_tools(read_only=True) leaves write_file out; schemas bound the page size."""
    assert [t.name for t in file_tools()] == ["read_file", "write_file", "list_dir"]
    assert [t.name for t in file_tools(read_only=True)] == ["read_file", "list_dir"]
    schema = file_tools()[0].definition.parameters
    assert schema["properties"]["limit"]["maximum"] == MAX_READ_CHARS
    assert schema["required"] == ["path"]
