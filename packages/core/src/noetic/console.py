"""Terminal output of the `noetic` command line: tables and text that fit the terminal.

Built on rich, which measures the terminal and wraps, truncates and redraws at any width (a
hand-written renderer got this wrong at narrow widths). Only the command line imports this
module, so `import noetic` never loads rich.

Everything shown here may come from outside — plugin metadata and errors, model text, layer
ids, document values — so it passes through `noetic.terminal_safe` (`safe_text`), and is put
into `Text` objects rather than markup, so neither terminal escape sequences nor rich markup in
it take effect.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from noetic.terminal_safe import terminal_safe

if TYPE_CHECKING:
    from noetic.plugins import PluginInfo
    from noetic.usage import LastLayerUsage

__all__ = ["console_for", "layer_usage_view", "natural_width", "plugins_table", "plugins_view", "safe_text"]


def safe_text(value: object) -> str:
    """`value` as one line of text for a table cell or a heading, through `terminal_safe`."""
    return terminal_safe(value if isinstance(value, str) else str(value), multiline=False)


def console_for(out: TextIO, *, width: int | None = None, terminal: bool | None = None) -> Console:
    """A console writing to `out`: colours and live redraws only on a terminal (and not under
    `NO_COLOR`), plain lines in a pipe or a file; the width is the terminal's. `terminal`
    overrides the detection."""
    return Console(
        file=out,
        width=width,
        force_terminal=terminal,
        no_color="NO_COLOR" in os.environ,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )


def natural_width(renderable: RenderableType) -> int:
    """The columns `renderable` takes when nothing has to wrap (for output to a pipe or a file,
    where no terminal width applies and a folded word would break `grep`)."""
    console = Console(width=10_000, file=open(os.devnull, "w"))  # noqa: SIM115 - closed below
    try:
        return Measurement.get(console, console.options, renderable).maximum
    finally:
        console.file.close()


#: Below this width tables give way to layouts that read well in a narrow terminal.
NARROW = 72


def plugins_view(report: Sequence[PluginInfo], width: int = 80) -> Group:
    """`noetic plugins`: a table (or, in a narrow terminal, one block per plugin), then each
    load error in full."""
    errors = [
        Text(f"{safe_text(info.name)}: error: {safe_text(info.error)}", style="red")
        for info in report
        if info.error
    ]
    if width >= NARROW:
        return Group(plugins_table(report), *errors)
    blocks: list[RenderableType] = []
    for info in report:
        version = f" {info.distribution} {info.version}" if info.distribution else ""
        blocks.append(Text.assemble((safe_text(info.name), "bold"), safe_text(version)))
        if info.error:
            details = [Text("failed to load (below)", style="red")]
        else:
            hooks = ", ".join(h.removeprefix("register_") for h in info.hooks) or "-"
            details = [
                Text("registered: " + safe_text(", ".join(info.registered) or "-")),
                Text("hooks: " + safe_text(hooks)),
            ]
        blocks.extend(Padding(detail, (0, 0, 0, 2)) for detail in details)
    return Group(*blocks, *errors)


def plugins_table(report: Sequence[PluginInfo]) -> Table:
    """One row per plugin: version, registrations and hooks (or that it failed to load)."""
    table = Table(box=box.SIMPLE_HEAD, expand=False, pad_edge=False)
    table.add_column("plugin", style="bold", overflow="fold", ratio=3)
    table.add_column("version", overflow="fold", ratio=3)
    table.add_column("registered", overflow="fold", ratio=4)
    table.add_column("hooks", overflow="fold", ratio=3)
    for info in report:
        version = f"{info.distribution} {info.version}" if info.distribution else "-"
        if info.error:
            registered = Text("failed to load (below)", style="red")
            hooks = Text("-")
        else:
            registered = Text("\n".join(safe_text(r) for r in info.registered) or "-")
            short = [h.removeprefix("register_") for h in info.hooks]
            hooks = Text("\n".join(safe_text(h) for h in short) or "-")
        table.add_row(Text(safe_text(info.name)), Text(safe_text(version)), registered, hooks)
    return table


def layer_usage_view(usage: LastLayerUsage, active_layers: Sequence[str] = (), width: int = 80) -> Any:
    """`noetic context`: the heading, one row per layer, the buckets and the epoch line.

    Layers in `active_layers` that put nothing in front of the model on this call get a row
    saying so, instead of the table claiming there are no layers. In a narrow terminal the
    changed/churn/re-bill columns are left out.
    """
    wide = width >= NARROW
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("layer", overflow="fold", ratio=2, min_width=8)
    columns = (
        ("tokens", "placement", "served", "changed", "churn", "rebill") if wide else ("tokens", "served")
    )
    for name in columns:
        table.add_column(name, justify="right" if name in ("tokens", "churn", "rebill") else "left")
    shown = set()
    for e in usage.layers:
        shown.add(e.layer_id)
        cells = (
            (e.placement, e.served, "yes" if e.changed else "no", f"{e.churn_rate:.2f}", str(e.rebill_tokens))
            if wide
            else (f"{e.placement}, {e.served}",)
        )
        table.add_row(Text(safe_text(e.layer_id)), str(e.token_count), *cells)
    for name in active_layers:
        if name not in shown:
            table.add_row(Text(safe_text(name)), "0", Text("(nothing shown this call)", style="dim"))
    if not usage.layers and not active_layers:
        table.add_row(Text("(no context layers)", style="dim"))
    table.add_section()
    for name, tokens in (
        ("system", usage.system_prompt_tokens),
        ("tools", usage.tools_tokens),
        ("history", usage.history_tokens),
        ("total", usage.total_used_tokens),
    ):
        table.add_row(name, str(tokens))
    heading = Text(
        f"context of execution {safe_text(usage.execution_id)} (model {safe_text(usage.model_id)})",
        style="bold",
    )
    epoch = usage.epoch
    if epoch is None:
        tail = Text("epoch: none (prompt-cache anchoring is off)")
    else:
        reason = f", re-anchored: {safe_text(epoch.reanchor_reason)}" if epoch.reanchor_reason else ""
        tail = Text(
            f"epoch {safe_text(epoch.id)}: age {epoch.age}, anchor {epoch.anchor_tokens}, "
            f"live {epoch.live_tokens}, delta {epoch.delta_tokens}{reason}"
        )
    return Group(heading, table, tail)
