"""Live terminal rendering of a turn's full stream, for `noetic run`.

- Custom items whose fields say how far something has got are drawn as progress bars, one per
  item type, redrawn in place as events and final items arrive: a `done`-like count with an
  `of`-like total (`done`/`of`, `completed`/`total`, …), a fraction (`progress`, 0..1), a
  percentage (`percent`), or a remaining count (`left`, `remaining`; its largest value seen is
  the total). A bar that reaches 100 % is written out and leaves the live area. Other custom
  items print as one `type key=value …` line.
- Model text is written as it streams; tool calls print one line each.

On a terminal the live area is redrawn with plain ANSI cursor codes (colour unless `NO_COLOR`
is set); elsewhere (a pipe, a file, CI logs) every update is one plain line instead. Text from
the stream (model text, tool calls, item fields and types) is untrusted and passes through
`terminal_safe` first, so it cannot carry escape sequences of its own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

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
    """Renders stream events to `out`; call `handle` per event and `close` at the end."""

    def __init__(self, out: TextIO, *, live: bool | None = None, color: bool | None = None):
        self.out = out
        self.live = out.isatty() if live is None else live
        self.color = (self.live and "NO_COLOR" not in os.environ) if color is None else color
        encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "")
        self._glyphs = ("█", "░") if encoding.startswith("utf") else ("#", "-")
        self._bars: dict[str, _Bar] = {}
        self._peaks: dict[str, float] = {}
        self._printed: dict[str, str] = {}
        self._drawn = 0
        self._streamed: set[str] = set()
        self._in_text = False

    # --- output primitives ------------------------------------------------------------------

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _clear_live(self) -> None:
        if self._drawn:
            self._write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _draw_live(self) -> None:
        if self.live and not self._in_text:
            self._clear_live()
            for bar in self._bars.values():
                self._write(self._bar_line(bar) + "\n")
            self._drawn = len(self._bars)

    def _line(self, text: str) -> None:
        """Write one permanent line above the live area."""
        self._end_text()
        self._clear_live()
        self._write(text + "\n")
        self._draw_live()

    def _end_text(self) -> None:
        if self._in_text:
            self._in_text = False
            self._write("\n")

    def _bar_line(self, bar: _Bar) -> str:
        full, empty = self._glyphs
        filled = round(bar.fraction * _WIDTH)
        gauge = self._style(full * filled, "32") + self._style(empty * (_WIDTH - filled), "2")
        return f"{self._style(bar.type, '36')} [{gauge}] {bar.fraction:4.0%}  {bar.label}"

    # --- events -----------------------------------------------------------------------------

    def handle(self, event: StreamEvent) -> None:
        """Render one full-stream event."""
        data = event.data
        if event.source == "sdk":
            if type(data) is TextDelta:
                self._text(data)
        elif isinstance(data, CustomItemEvent):
            self._progress(data.type, to_jsonable(data.event), final=False)
        elif event.type.endswith(":item_appended"):
            self._appended(data["item"])

    def _text(self, delta: TextDelta) -> None:
        if not self._in_text:
            self._clear_live()
            self._write(self._style("assistant ", "2"))
            self._in_text = True
        if delta.item_id is not None:
            self._streamed.add(delta.item_id)
        self._write(terminal_safe(delta.text))

    def _appended(self, item: Any) -> None:
        if isinstance(item, CustomItem):
            fields = {k: v for k, v in dump_item(item).items() if k not in ("id", "type")}
            self._progress(item.type, fields, final=True)
        elif isinstance(item, MessageItem) and item.role == "assistant":
            if item.id in self._streamed:
                self._end_text()
                self._draw_live()
            else:
                self._line(self._style("assistant ", "2") + terminal_safe(item.text))
        elif isinstance(item, FunctionCallItem):
            self._line(self._style(terminal_safe(f"→ {item.name}({item.arguments})", multiline=False), "2"))

    def _progress(self, type: str, fields: Any, *, final: bool) -> None:
        type = terminal_safe(type, multiline=False)
        found = progress_of(fields, self._peaks.get(type, 0.0)) if isinstance(fields, Mapping) else None
        if found is None:
            shown = (
                " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in fields.items())
                if isinstance(fields, Mapping)
                else json.dumps(fields, ensure_ascii=False)
            )
            self._line(f"{self._style(type, '36')} {terminal_safe(shown, multiline=False)}")
            return
        fraction, label, self._peaks[type] = found
        bar = _Bar(type, fraction, label)
        if not self.live:
            line = self._bar_line(bar)
            if self._printed.get(type) != line:
                self._printed[type] = line
                self._line(line)
            return
        self._end_text()
        if final and fraction >= 1.0:
            self._bars.pop(type, None)
            self._line(self._bar_line(bar))
            return
        self._bars[type] = bar
        self._draw_live()

    def close(self) -> None:
        """Finish the turn: end streamed text and write out the bars still live."""
        self._end_text()
        self._clear_live()
        for bar in self._bars.values():
            self._write(self._bar_line(bar) + "\n")
        self._bars.clear()
