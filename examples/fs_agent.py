"""One file-working agent, two filesystems: only the harness's `fs=` argument changes.

The agent (a scripted model, so it runs offline) gets the built-in file tools, writes a
report, appends to it, lists its folder, reads it back — and tries to read `../../etc/passwd`,
which the sandbox refuses with a tool error the model sees. It runs once on `memory://` and
once on a local temporary directory:

    uv run python examples/fs_agent.py

Swap the scripted model for `model="openrouter:<model id>"` to let a real model do the same
work in a sandboxed directory.
"""

from __future__ import annotations

import json
import tempfile

import anyio
import noetic as nt
from noetic.fs.tools import file_tools
from noetic.items import FunctionCallItem, FunctionCallOutputItem
from noetic.testing import ScriptedModel, text_reply, tool_call_reply


def scripted_model() -> ScriptedModel:
    """The rounds a model would play: four file calls, one refused escape, then an answer."""
    return ScriptedModel(
        [
            tool_call_reply("write_file", {"path": "reports/summary.md", "content": "# Summary\n"}),
            tool_call_reply(
                "write_file",
                {"path": "reports/summary.md", "content": "- all checks passed\n", "append": True},
            ),
            tool_call_reply("list_dir", {"path": "reports"}),
            tool_call_reply("read_file", {"path": "reports/summary.md"}),
            tool_call_reply("read_file", {"path": "../../etc/passwd"}),
            text_reply("The summary is in reports/summary.md."),
        ]
    )


AGENT = nt.call_model(
    "clerk",
    instructions="Keep your notes in the workspace with the file tools.",
    tools=file_tools(),
)


async def run_agent(fs: str) -> None:
    """Run the agent on the filesystem at URL `fs` and print what happened."""
    async with nt.AgentHarness("clerk", agent_graph=AGENT, model=scripted_model(), fs=fs) as h:
        response = await h.run("Write a short summary report.")
        print(f"--- fs={fs!r} ({type(h.fs).__name__})")
        for item in response.items:
            if isinstance(item, FunctionCallItem):
                print(f"  call   {item.name}({item.arguments})")
            elif isinstance(item, FunctionCallOutputItem):
                print(f"  result {json.loads(item.output)}")
        print(f"  answer {response.text!r}")
        print(f"  on the adapter: {await h.fs.glob('**')}")


async def main() -> None:
    """The same agent on `memory://`, then on a local directory."""
    await run_agent("memory://fs-agent-demo")
    with tempfile.TemporaryDirectory() as workspace:
        await run_agent(f"file://{workspace}")


if __name__ == "__main__":
    anyio.run(main)
