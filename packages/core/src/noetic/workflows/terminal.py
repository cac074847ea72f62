"""Live terminal rendering of a turn's full stream, for `noetic run`.

- Custom items whose fields say how far something has got are drawn as progress bars, one per
  item type, redrawn in place as events and final items arrive: a `done`-like count with an
  `of`-like total (`done`/`of`, `completed`/`total`, …), a fraction (`progress`, 0..1), a
  percentage (`percent`), or a remaining count (`left`, `remaining`; its largest value seen is
  the total). A bar that reaches 100 % is written out and leaves the live area. Other custom
  items print as one `type key=value …` line.
- Model text is shown as it streams; tool calls print one line each.

On a terminal the live area (streaming text and bars) is a rich `Live` display: it is measured
against the terminal's width on every redraw, so bars shrink and text wraps instead of
breaking into stacks of partial lines (colour unless `NO_COLOR` is set). Elsewhere (a pipe, a
file, CI logs) every update is one plain line instead. Text from the stream (model text, tool
calls, item fields and types) is untrusted and passes through `terminal_safe` first, so it
cannot carry escape sequences of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from noetic.console import console_for
from noetic.custom_items import CustomItem, CustomItemEvent
from noetic.items import FunctionCallItem, MessageItem, dump_item
from noetic.model import TextDelta
from noetic.schema import to_jsonable
from noetic.streams import StreamEvent
from noetic.terminal_safe import terminal_safe

__all__ = ["TerminalRenderer", "progress_of"]

_DONE = ("done", "completed", "complete", "current", "processed", "finished", "count", "step", "value", "n")
_TOTAL = ("of", "total", "max", "size", "steps", "count_total", "out_of")
_FRACTION = ("progress", "fraction", "ratio")
_PERCENT = ("percent", "pct", "percentage")
_REMAINING = ("left", "remaining", "todo", "pending")
_WIDTH = 24
#: Lines of streaming text kept in the live area (the whole text is printed when it ends).
_TEXT_LINES = 6


def _number(fields: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, float] | None:
    for key in keys:
        value = fields.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return key, float(value)
    return None


def _count(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def progress_of(fields: Mapping[str, Any], peak: float = 0.0) -> tuple[float, str, float] | None:
    """How far `fields` say something has got: `(fraction 0..1, label, peak)`, or None when
    they carry no progress. `peak` is the largest remaining count seen so far for this item."""
    total = _number(fields, _TOTAL)
    done = _number(fields, _DONE)
    if total is not None and done is not None and done[0] != total[0]:
        fraction = done[1] / total[1] if total[1] > 0 else 1.0
        return min(max(fraction, 0.0), 1.0), f"{_count(done[1])}/{_count(total[1])}", peak
    found = _number(fields, _FRACTION)
    if found is not None:
        return min(max(found[1], 0.0), 1.0), f"{found[1]:.0%}", peak
    found = _number(fields, _PERCENT)
    if found is not None:
        return min(max(found[1] / 100, 0.0), 1.0), f"{found[1]:g}%", peak
    left = _number(fields, _REMAINING)
    if left is not None:
        high = max(peak, left[1], total[1] if total is not None else 0.0)
        fraction = (high - left[1]) / high if high > 0 else 1.0
        return min(max(fraction, 0.0), 1.0), f"{_count(left[1])} {left[0]}", high
    return None


@dataclass(slots=True)
class _Bar:
    type: str
    fraction: float
    label: str


class TerminalRenderer:
    """Renders stream events to `out`; call `handle` per event and `close` at the end.

    `live` (default: whether `out` is a terminal) selects the redrawn display; `width` fixes
    the width instead of measuring the terminal.
    """

    def __init__(
        self, out: TextIO, *, live: bool | None = None, color: bool | None = None, width: int | None = None
    ):
        self.out = out
        self.live = out.isatty() if live is None else live
        self.console = console_for(out, width=width, terminal=self.live)
        if not self.live:
            self.console.no_color = True
        if color is not None:
            self.console.no_color = not color
        self._bars: dict[str, _Bar] = {}
        self._peaks: dict[str, float] = {}
        self._printed: dict[str, str] = {}
        self._streamed: set[str] = set()
        self._text = ""  # streaming assistant text not yet finished
        self._display: Live | None = None

    # --- output primitives ------------------------------------------------------------------

    def _refresh(self) -> None:
        if not self.live:
            return
        if self._display is None:
            self._display = Live(
                self._view(),
                console=self.console,
                auto_refresh=False,
                transient=True,
                vertical_overflow="crop",
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._display.start()
        self._display.update(self._view(), refresh=True)

    def _view(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self._text:
            lines = self._text.splitlines()[-_TEXT_LINES:]
            parts.append(Text.assemble(("assistant ", "dim"), "\n".join(lines)))
        if self._bars:
            parts.append(self._bars_table(list(self._bars.values())))
        return Group(*parts)

    def _bars_table(self, bars: list[_Bar]) -> Table:
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(style="cyan", no_wrap=True, overflow="ellipsis", max_width=30)
        grid.add_column(ratio=1, min_width=4)
        grid.add_column(justify="right", no_wrap=True, width=4)
        grid.add_column(no_wrap=True, overflow="ellipsis", max_width=16)
        for bar in bars:
            grid.add_row(
                Text(terminal_safe(bar.type)),
                ProgressBar(total=1.0, completed=bar.fraction, width=None, complete_style="green"),
                f"{bar.fraction:.0%}",
                Text(terminal_safe(bar.label)),
            )
        return grid

    def _print(self, renderable: RenderableType) -> None:
        """Write one permanent entry above the live area."""
        self.console.print(renderable, overflow="fold")
        self._refresh()

    def _plain_bar(self, bar: _Bar) -> str:
        filled = round(bar.fraction * _WIDTH)
        return f"{terminal_safe(bar.type)} [{'#' * filled}{'-' * (_WIDTH - filled)}] {bar.fraction:4.0%}  {terminal_safe(bar.label)}"

    # --- events -----------------------------------------------------------------------------

    def handle(self, event: StreamEvent) -> None:
        """Render one full-stream event."""
        data = event.data
        if event.source == "sdk":
            if type(data) is TextDelta:
                self._delta(data)
        elif isinstance(data, CustomItemEvent):
            self._progress(data.type, to_jsonable(data.event), final=False)
        elif event.type.endswith(":item_appended"):
            self._appended(data["item"])

    def _delta(self, delta: TextDelta) -> None:
        if delta.item_id is not None:
            self._streamed.add(delta.item_id)
        if self.live:
            self._text += terminal_safe(delta.text)
            self._refresh()
        else:
            if not self._text:
                self.out.write("assistant ")
            self._text += delta.text
            self.out.write(terminal_safe(delta.text))
            self.out.flush()

    def _end_text(self) -> None:
        if self._text and not self.live:
            self.out.write("\n")
        self._text = ""

    def _appended(self, item: Any) -> None:
        if isinstance(item, CustomItem):
            fields = {k: v for k, v in dump_item(item).items() if k not in ("id", "type")}
            self._progress(item.type, fields, final=True)
        elif isinstance(item, MessageItem) and item.role == "assistant":
            streamed = item.id in self._streamed
            was_live = self.live and bool(self._text)
            self._end_text()
            if not streamed or was_live:
                self._print(Text.assemble(("assistant ", "dim"), terminal_safe(item.text)))
        elif isinstance(item, FunctionCallItem):
            self._end_text()
            self._print(Text(terminal_safe(f"→ {item.name}({item.arguments})", multiline=False), style="dim"))

    def _progress(self, type: str, fields: Any, *, final: bool) -> None:
        type = terminal_safe(type, multiline=False)
        found = progress_of(fields, self._peaks.get(type, 0.0)) if isinstance(fields, Mapping) else None
        if found is None:
            shown = (
                " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in fields.items())
                if isinstance(fields, Mapping)
                else json.dumps(fields, ensure_ascii=False)
            )
            self._print(Text.assemble((type, "cyan"), " ", terminal_safe(shown, multiline=False)))
            return
        fraction, label, self._peaks[type] = found
        bar = _Bar(type, fraction, label)
        if not self.live:
            line = self._plain_bar(bar)
            if self._printed.get(type) != line:
                self._printed[type] = line
                self._end_text()
                self.out.write(line + "\n")
                self.out.flush()
            return
        if final and fraction >= 1.0:
            self._bars.pop(type, None)
            self._print(self._bars_table([bar]))
            return
        self._bars[type] = bar
        self._refresh()

    def close(self) -> None:
        """Finish the turn: end streamed text and write out the bars still live."""
        if self._display is not None:
            self._display.stop()
            self._display = None
        if self.live:
            if self._text:
                self.console.print(Text.assemble(("assistant ", "dim"), self._text), overflow="fold")
            if self._bars:
                self.console.print(self._bars_table(list(self._bars.values())))
        self._end_text()
        self._bars.clear()
