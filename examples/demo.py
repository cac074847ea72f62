"""The offline demo: an agent calls a tool, then answers, with its items streaming live.

Runs on the embedded defaults — the scripted model from `noetic.testing` and the in-memory
filesystem — so it needs no network and no API key: `make demo`. On a terminal the typing line
is a rich `Live` display, redrawn in place at any width; in a pipe each snapshot is one line.
"""

from __future__ import annotations

import anyio
import noetic as nt
from noetic.items import FunctionCallItem, FunctionCallOutputItem, MessageItem
from noetic.terminal_safe import terminal_safe
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from pydantic import BaseModel
from rich.console import Console
from rich.live import Live
from rich.text import Text

#: The terminal (rich measures it, so the typing line never wraps into a stack of copies).
console = Console(highlight=False, markup=False)


class Note(BaseModel):
    """Arguments of the `save_note` tool."""

    path: str
    text: str


async def save_note(note: Note, ctx: nt.Context) -> dict[str, object]:
    """Write a note into the harness filesystem (in memory here) and report its size."""
    await ctx.fs.write_text(note.path, note.text)
    return {"saved": note.path, "bytes": len(note.text.encode())}


save = nt.tool("save_note", description="Save a note to a file.", input=Note, execute=save_note)

model = ScriptedModel(
    [
        tool_call_reply(
            "save_note",
            {"path": "notes/todo.md", "text": "- ship noetic"},
            usage={"input_tokens": 120, "output_tokens": 18},
            cost=0.00042,
        ),
        text_reply(
            "I saved your to-do list to notes/todo.md.",
            usage={"input_tokens": 160, "output_tokens": 12, "cached_tokens": 96},
            cost=0.00031,
        ),
    ],
    delta_size=6,
)
agent = nt.call_model("assistant", instructions="Save what the user asks you to remember.", tools=[save])


def show(item: object, live: Live | None) -> None:
    """Print one streamed item snapshot; on a terminal the typing line is redrawn in place."""
    if isinstance(item, MessageItem) and not item.is_complete:
        typing = Text(f"  {item.role} is typing: {terminal_safe(item.text)}")
        if live is not None:
            live.update(typing, refresh=True)
        else:
            console.print(typing)
        return
    if isinstance(item, MessageItem):
        line = f"  {item.role}: {item.text}"
    elif isinstance(item, FunctionCallItem):
        line = f"  tool call: {item.name}({item.arguments})"
    elif isinstance(item, FunctionCallOutputItem):
        line = f"  tool result: {item.output}"
    else:
        return
    if live is not None:
        live.update(Text(""), refresh=True)
    console.print(Text(terminal_safe(line)))


async def main() -> None:
    """Run one turn while printing the item stream."""
    async with nt.AgentHarness("demo", agent_graph=agent, model=model) as harness:
        print("streaming items:")
        async with harness.stream("Remember: ship noetic.") as turn:
            if console.is_terminal:
                with Live(console=console, auto_refresh=False, transient=True) as live:
                    async for item in turn.items():
                        show(item, live)
            else:
                async for item in turn.items():
                    show(item, None)
        response = turn.response
        saved = await harness.fs.read_text("notes/todo.md")
    print(f"answer: {response.text}")
    print(f"file notes/todo.md: {saved!r}")
    print(
        f"tokens in/out: {response.usage.input_tokens}/{response.usage.output_tokens}, "
        f"cached: {response.usage.cached_tokens}; cost ${response.cost:.5f}, billed ${response.billed_cost:.5f}"
    )


if __name__ == "__main__":
    anyio.run(main)
