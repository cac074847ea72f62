"""`render_layer_usage`: the `noetic context` table — how a model call spent its window.

One row per layer (tokens, band, fresh or pinned, changed, churn, re-bill), then the system,
tools and history buckets, the total, and the epoch line (`age` climbing means the prompt
cache is holding; an age stuck at 1 means every call re-anchors — the reason says why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from noetic.usage_reports import LastLayerUsage

__all__ = ["render_layer_usage"]

_HEADER = ("layer", "tokens", "placement", "served", "changed", "churn", "rebill")


def render_layer_usage(usage: LastLayerUsage) -> str:
    """The usage snapshot as a plain-text table."""
    rows = [
        (
            e.layer_id,
            str(e.token_count),
            e.placement,
            e.served,
            "yes" if e.changed else "no",
            f"{e.churn_rate:.2f}",
            str(e.rebill_tokens),
        )
        for e in usage.layers
    ]
    buckets = [
        ("system", usage.system_prompt_tokens),
        ("tools", usage.tools_tokens),
        ("history", usage.history_tokens),
        ("total", usage.total_used_tokens),
    ]
    widths = [
        max(len(row[i]) for row in (_HEADER, *rows, *((b, str(n), "", "", "", "", "") for b, n in buckets)))
        for i in range(len(_HEADER))
    ]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in (1, 5, 6) else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [f"context of execution {usage.execution_id} (model {usage.model_id})", line(_HEADER)]
    out.extend(line(row) for row in rows)
    if not rows:
        out.append("(no context layers)")
    out.extend(line((name, str(tokens), "", "", "", "", "")) for name, tokens in buckets)
    epoch = usage.epoch
    if epoch is None:
        out.append("epoch: none (prompt-cache anchoring is off)")
    else:
        reason = f", re-anchored: {epoch.reanchor_reason}" if epoch.reanchor_reason else ""
        out.append(
            f"epoch {epoch.id}: age {epoch.age}, anchor {epoch.anchor_tokens}, "
            f"live {epoch.live_tokens}, delta {epoch.delta_tokens}{reason}"
        )
    return "\n".join(out)
