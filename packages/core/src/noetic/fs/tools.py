"""Built-in file tools a model can be given: `read_file`, `write_file` and `list_dir`.

They work on `ctx.fs`, the harness filesystem, so an agent is confined to the same sandbox as
every step: a hostile path, a missing file or a directory where a file was expected comes back
to the model as a tool error output (`{"error": "[FILE_NOT_FOUND] …"}`) it can read and
recover from. Long files are returned in pages of at most `MAX_READ_CHARS` characters
(`offset` / `next_offset`), and long listings are cut at `MAX_LIST_ENTRIES`.

    import noetic as nt
    from noetic.fs.tools import file_tools

    agent = nt.call_model("work", instructions="Keep notes in notes.md.", tools=file_tools())
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from noetic.fs.paths import safe_path
from noetic.tools import Tool, tool

if TYPE_CHECKING:
    from noetic.execution_context import Context

__all__ = ["MAX_LIST_ENTRIES", "MAX_READ_CHARS", "file_tools", "list_dir", "read_file", "write_file"]

#: Most characters one `read_file` call returns.
MAX_READ_CHARS = 100_000
#: Most entries one `list_dir` call returns.
MAX_LIST_ENTRIES = 1_000

_PATH_HELP = "Path relative to the workspace root, with '/' separators, e.g. 'notes/todo.md'."


class ReadFileArgs(BaseModel):
    """Arguments of `read_file`."""

    path: str = Field(description=_PATH_HELP)
    offset: int = Field(0, ge=0, description="First character to return; use next_offset to page.")
    limit: int = Field(MAX_READ_CHARS, ge=1, le=MAX_READ_CHARS, description="Most characters to return.")


class WriteFileArgs(BaseModel):
    """Arguments of `write_file`."""

    path: str = Field(description=_PATH_HELP)
    content: str = Field(description="The full text to write.")
    append: bool = Field(False, description="Add content to the end of the file instead of replacing it.")


class ListDirArgs(BaseModel):
    """Arguments of `list_dir`."""

    path: str = Field(".", description="Directory relative to the workspace root; '.' is the root.")


async def _read_file(args: ReadFileArgs, ctx: Context) -> dict[str, Any]:
    rel = safe_path(args.path)
    text = await ctx.fs.read_text(rel)
    end = min(len(text), args.offset + args.limit)
    return {
        "path": rel,
        "content": text[args.offset : end],
        "total_chars": len(text),
        "next_offset": end if end < len(text) else None,
    }


async def _write_file(args: WriteFileArgs, ctx: Context) -> dict[str, Any]:
    rel = safe_path(args.path)
    if args.append:
        await ctx.fs.append_text(rel, args.content)
    else:
        await ctx.fs.write_text(rel, args.content)
    return {"path": rel, "chars_written": len(args.content), "appended": args.append}


async def _list_dir(args: ListDirArgs, ctx: Context) -> dict[str, Any]:
    rel = safe_path(args.path)
    entries = await ctx.fs.list_dir(rel)
    shown = [{"name": e.name, "kind": e.kind, "size": e.size} for e in entries[:MAX_LIST_ENTRIES]]
    return {"path": rel or ".", "entries": shown, "truncated": len(entries) > MAX_LIST_ENTRIES}


read_file: Tool = tool(
    "read_file",
    description="Read a UTF-8 text file from the workspace. Long files come in pages: when "
    "next_offset is not null, call again with offset=next_offset for the rest.",
    input=ReadFileArgs,
    execute=_read_file,
)

write_file: Tool = tool(
    "write_file",
    description="Create or replace a UTF-8 text file in the workspace (missing directories are "
    "created), or append to it with append=true.",
    input=WriteFileArgs,
    execute=_write_file,
)

list_dir: Tool = tool(
    "list_dir",
    description="List a workspace directory: each entry's name, kind ('file' or 'directory') and size.",
    input=ListDirArgs,
    execute=_list_dir,
)


def file_tools(*, read_only: bool = False) -> tuple[Tool, ...]:
    """The file tools to give a model: all three, or `read_file` and `list_dir` when `read_only`."""
    return (read_file, list_dir) if read_only else (read_file, write_file, list_dir)
