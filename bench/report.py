"""Turn the raw samples of `run.py` into tables, a console summary, `report.md` and `ratios.png`.

Every figure is a median over repetitions with its min–max. Ratios compare costs (time per
unit of work, or memory), so a ratio above 1 always means "that many times heavier": each
peer's cost over noetic's, and noetic's cost over the hand-written limit's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import growth

PEERS = ("pydantic-ai", "openai-agents", "langgraph")
ANALYSIS = Path(__file__).resolve().parent / "ANALYSIS.md"


@dataclass
class Stat:
    """A metric's samples: median, min, max, and the failures seen."""

    values: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)


@dataclass(frozen=True)
class Metric:
    """How to read one scenario: the figure per sample, its unit, and whether more is better."""

    title: str
    unit: str
    value: Callable[[dict[str, Any]], float]
    higher_is_better: bool = False
    target: float | None = None
    fmt: str = "{:,.1f}"
    #: The most noetic's median may be as a multiple of the limit's median in the same run.
    limit_target: float | None = None
    #: When set, `target` is a ratio: noetic's cost over this subject's, measured in the same run.
    target_over: str | None = None


METRICS: dict[str, Metric] = {
    "s1": Metric(
        "S1 tool round trip: time per model round",
        "µs",
        lambda r: r["seconds"] / r["rounds"] * 1e6,
        target=60.0,
        limit_target=10.0,
    ),
    "s2": Metric(
        "S2 streaming: deltas per second",
        "deltas/s",
        lambda r: r["deltas"] / r["seconds"],
        True,
        1_000_000.0,
        "{:,.0f}",
    ),
    "s3": Metric(
        "S3 fan-out: 1,000 concurrent round trips, wall time",
        "s",
        lambda r: r["seconds"],
        target=0.3,
        fmt="{:.3f}",
    ),
    "s3mem": Metric(
        "S3 fan-out: RSS growth", "MiB", lambda r: r["rss_growth_mib"], target=20.0, fmt="{:.1f}"
    ),
    "s3x": Metric(
        "S3 at scale: 10,000 concurrent round trips, wall time", "s", lambda r: r["seconds"], fmt="{:.3f}"
    ),
    "s3xmem": Metric(
        "S3 at scale: 10,000 concurrent round trips, RSS growth",
        "MiB",
        lambda r: r["rss_growth_mib"],
        target=60.0,
        fmt="{:.1f}",
    ),
    "s4": Metric(
        "S4 import: cold import in a fresh interpreter",
        "s",
        lambda r: r["seconds"],
        target=1.1,
        fmt="{:.3f}",
        target_over="pydantic floor",
    ),
    "s5": Metric(
        "S5 durable round trip on SQLite: time per round trip",
        "µs",
        lambda r: r["seconds"] / r["runs"] * 1e6,
        fmt="{:,.0f}",
    ),
    "s6": Metric(
        "S6 layers: the S1 round trip through context layers, anchoring on: time per model round",
        "µs",
        lambda r: r["seconds"] / r["rounds"] * 1e6,
    ),
}
#: S6 targets: µs per model round the first layer may add over bare, and 10 layers over bare.
S6_FIRST_LAYER_US = 50.0
S6_TEN_LAYERS_RATIO = 2.0


def s6_target_rows(rows: dict[str, Stat]) -> list[list[str]]:
    """The S6 target rows: each single-layer variant's added µs per round, 10 layers' ratio."""
    bare = rows.get("noetic")
    if bare is None or not bare.ok:
        return []
    out = []
    for name in ("noetic+scratchpad", "noetic+1-layer"):
        stat = rows.get(name)
        if stat is not None and stat.ok:
            added = stat.median - bare.median
            out.append(
                [
                    f"S6: {name.removeprefix('noetic+')} over bare, per model round",
                    f"≤ +{S6_FIRST_LAYER_US:.0f} µs",
                    f"+{added:,.1f} µs",
                    "met" if added <= S6_FIRST_LAYER_US else "NOT met",
                ]
            )
    ten = rows.get("noetic+10-layers")
    if ten is not None and ten.ok:
        ratio = ten.median / bare.median
        out.append(
            [
                "S6: 10 layers over bare, per model round",
                f"≤ {S6_TEN_LAYERS_RATIO:.1f}×",
                f"{ratio:.2f}×",
                "met" if ratio <= S6_TEN_LAYERS_RATIO else "NOT met",
            ]
        )
    return out


def _stat(results: list[dict[str, Any]], value: Callable[[dict[str, Any]], float]) -> Stat:
    stat = Stat()
    for result in results:
        if "error" in result:
            stat.errors.append(result["error"])
        elif "pending" in result:
            stat.errors.append("pending: " + result["pending"])
        else:
            stat.values.append(value(result))
    return stat


def _us_per_delta(result: dict[str, Any]) -> float:
    return float(result["seconds"]) / result["deltas"] * 1e6


def summarise(raw: dict[str, Any]) -> dict[str, Any]:
    """{metric: {subject: Stat}} plus {"growth": {scenario: {size: Stat}}}."""
    samples: dict[str, list[dict[str, Any]]] = raw["samples"]
    tables: dict[str, Any] = {}
    for key, metric in METRICS.items():
        prefix = key.removesuffix("mem")
        rows = {}
        for sample_key, results in samples.items():
            scenario, _, subject = sample_key.partition("/")
            if scenario == prefix:
                rows[subject] = _stat(results, metric.value)
        if rows:
            tables[key] = rows
    grown: dict[str, dict[int, Stat]] = {}
    for sample_key, results in samples.items():
        if sample_key.startswith("growth/"):
            _, name, size = sample_key.split("/")
            grown.setdefault(name, {})[int(size)] = _stat(results, lambda r: r["seconds"] / r["units"] * 1e6)
    if grown:
        tables["growth"] = grown
    sessions = {
        key.partition("/")[2]: results for key, results in samples.items() if key.startswith("sessions/")
    }
    if sessions:
        tables["sessions"] = sessions
    sized: dict[str, dict[int, Stat]] = {}  # µs per delta of noetic's streams at each S2 size
    for sample_key, results in samples.items():
        if sample_key.startswith("s2size/"):
            _, subject, size = sample_key.split("/")
            sized.setdefault(subject, {})[int(size)] = _stat(results, _us_per_delta)
    for subject, sizes in sized.items():  # the default size, from the S2 table's own samples
        for result in samples.get(f"s2/{subject}", []):
            if "deltas" in result:
                sizes.setdefault(int(result["deltas"]), _stat(samples[f"s2/{subject}"], _us_per_delta))
    if sized:
        tables["s2size"] = sized
    return tables


#: The item stream's per-delta cost, largest size over smallest, must stay at or under this.
S2_FLATNESS_TARGET = 1.3


def s2_size_rows(sized: dict[str, dict[int, Stat]]) -> list[list[str]]:
    """One row per noetic stream: µs per delta at each S2 size, and the largest over the smallest."""
    rows = []
    for subject, sizes in sized.items():
        cells = [f"{n:,}: {sizes[n].median:.2f}" if sizes[n].ok else f"{n:,}: failed" for n in sorted(sizes)]
        flat = s2_flatness(sizes)
        rows.append([subject, "; ".join(cells), "—" if flat is None else f"{flat:.2f}×"])
    return rows


def s2_flatness(sizes: dict[int, Stat]) -> float | None:
    """The largest size's µs per delta over the smallest's (None unless both measured)."""
    if len(sizes) < 2 or not (sizes[min(sizes)].ok and sizes[max(sizes)].ok):
        return None
    return sizes[max(sizes)].median / sizes[min(sizes)].median


#: S3 at scale: the 10,000-run wall time over the 1,000-run one may be at most this (linear: 10).
S3_SCALE_TARGET = 10.0


def s3_scale_rows(tables: dict[str, Any]) -> list[list[str]]:
    """Per subject run at both sizes: the 10,000 run's median wall time over the 1,000 run's."""
    rows = []
    for subject, big in tables.get("s3x", {}).items():
        small = tables.get("s3", {}).get(subject)
        ratio = cost_ratio(METRICS["s3"], big, small) if small is not None else None
        rows.append(
            [
                subject,
                _ratio(ratio),
                "—" if ratio is None else "met" if ratio <= S3_SCALE_TARGET else "NOT met",
            ]
        )
    return rows


def session_rows(sessions: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    """Per mode of the session growth scenario (median over repetitions): RSS growth at the
    first and last sample, the drift between them, sessions left in memory, µs per thread."""
    rows = []
    for mode, results in sessions.items():
        ok = [r for r in results if "error" not in r]
        if not ok:
            rows.append(
                [mode, "failed: " + (results[0].get("error", "no samples") if results else "no samples")]
            )
            continue
        first = statistics.median(r["rss_growth_mib"][0][1] for r in ok)
        last = statistics.median(r["rss_growth_mib"][-1][1] for r in ok)
        at_first, threads = ok[0]["rss_growth_mib"][0][0], ok[0]["threads"]
        per_thread = statistics.median(r["seconds"] / r["threads"] * 1e6 for r in ok)
        live = statistics.median(r["live_sessions"] for r in ok)
        rows.append(
            [
                mode,
                f"{threads:,}",
                f"{first:.1f} (at {at_first:,})",
                f"{last:.1f}",
                f"{last - first:.1f}",
                f"{live:,.0f}",
                f"{per_thread:,.0f}",
            ]
        )
    return rows


SESSION_HEADER = [
    "mode",
    "threads",
    "RSS growth MiB at the first sample",
    "at the last",
    "last − first",
    "sessions in memory",
    "µs per thread",
]


def cost_ratio(metric: Metric, heavier: Stat, lighter: Stat) -> float | None:
    """How many times `heavier`'s cost is `lighter`'s (None when either failed)."""
    if not (heavier.ok and lighter.ok):
        return None
    a, b = heavier.median, lighter.median
    return b / a if metric.higher_is_better else a / b


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}×" if value >= 10 else f"{value:.2f}×"


def _range(metric: Metric, stat: Stat) -> str:
    if not stat.ok:
        return "failed: " + (stat.errors[0] if stat.errors else "no samples")
    return f"{metric.fmt.format(stat.median)} ({metric.fmt.format(min(stat.values))}–{metric.fmt.format(max(stat.values))})"


def _met(metric: Metric, stat: Stat) -> str:
    if metric.target is None or not stat.ok:
        return "—"
    ok = stat.median >= metric.target if metric.higher_is_better else stat.median <= metric.target
    return "met" if ok else "NOT met"


def _ratio_target_row(metric: Metric, stat: Stat, reference: Stat | None) -> list[str]:
    """A target row for a ratio target: noetic's cost over `metric.target_over`'s, same run."""
    target = f"≤ {metric.target:.2f}× {metric.target_over}"
    ratio = None if reference is None else cost_ratio(metric, stat, reference)
    if reference is None or ratio is None or metric.target is None:
        return [metric.title, target, "—", "—"]
    shown = f"{ratio:.2f}× ({_range(metric, stat)} over {_range(metric, reference)})"
    return [metric.title, target, shown, "met" if ratio <= metric.target else "NOT met"]


def scenario_rows(key: str, rows: dict[str, Stat]) -> list[list[str]]:
    """Table rows: subject, median (min–max), ratio to noetic, and noetic over the limit."""
    metric = METRICS[key]
    noetic = rows.get("noetic")
    out = []
    for subject, stat in rows.items():
        if subject == "noetic":
            ratio = "1 (reference)"
        elif noetic is None:
            ratio = "—"
        elif subject in ("limit", "noetic deps", "pydantic floor"):
            ratio = f"noetic is {_ratio(cost_ratio(metric, noetic, stat))} of this"
        else:
            ratio = _ratio(cost_ratio(metric, stat, noetic))
        out.append([subject, _range(metric, stat), ratio])
    order = {
        name: i
        for i, name in enumerate(
            (
                "noetic",
                "noetic-items",
                "noetic-evict",
                "noetic-unpacked",
                *PEERS,
                "limit",
                "noetic deps",
                "pydantic floor",
            )
        )
    }
    return sorted(out, key=lambda row: order.get(row[0], 99))


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def growth_rows(grown: dict[str, dict[int, Stat]]) -> list[list[str]]:
    """One row per growth scenario: µs per unit at each size, and the largest over the smallest."""
    rows = []
    for name, sizes in grown.items():
        unit = growth.UNITS[name]
        cells = []
        pending = None
        for size in sorted(sizes):
            stat = sizes[size]
            if stat.ok:
                cells.append(f"{size}: {stat.median:,.0f} ({min(stat.values):,.0f}–{max(stat.values):,.0f})")
            else:
                pending = stat.errors[0] if stat.errors else "no samples"
        if pending is not None and not cells:
            rows.append([name, f"µs per {unit}", pending, "—"])
            continue
        ok = [sizes[s] for s in sorted(sizes) if sizes[s].ok]
        spread = f"{ok[-1].median / ok[0].median:.2f}×" if len(ok) > 1 else "—"
        rows.append([name, f"µs per {unit}", "; ".join(cells), spread])
    return rows


def console(tables: dict[str, Any]) -> str:
    """The plain-text summary printed at the end of a run."""
    parts = []
    for key, metric in METRICS.items():
        if key in tables:
            parts.append(f"\n{metric.title} [{metric.unit}]")
            for subject, value, ratio in scenario_rows(key, tables[key]):
                parts.append(f"  {subject:<14} {value:<36} {ratio}")
    if "s3x" in tables:
        parts.append("\nS3 at scale: 10,000-run wall time / 1,000-run wall time")
        for subject, ratio, met in s3_scale_rows(tables):
            parts.append(f"  {subject:<14} {ratio:<10} {met}")
    if "sessions" in tables:
        parts.append("\nsession growth: " + " | ".join(SESSION_HEADER))
        for row in session_rows(tables["sessions"]):
            parts.append("  " + " | ".join(row))
    if "growth" in tables:
        parts.append("\nnoetic growth scenarios (median µs per unit at each size; largest/smallest)")
        for name, unit, cells, spread in growth_rows(tables["growth"]):
            parts.append(f"  {name:<11} {unit:<20} {cells}   {spread}")
    if "s2size" in tables:
        parts.append("\nS2 per-delta cost by size (median µs per delta; largest/smallest)")
        for subject, cells, spread in s2_size_rows(tables["s2size"]):
            parts.append(f"  {subject:<14} {cells}   {spread}")
    return "\n".join(parts)


def plot(tables: dict[str, Any], path: Path) -> None:
    """Horizontal bars of every ratio, on a log scale, one group per scenario."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, values, colors = [], [], []
    palette = {
        "pydantic-ai": "#e4572e",
        "openai-agents": "#17bebb",
        "langgraph": "#ffc914",
        "limit": "#76b041",
    }
    for key, metric in METRICS.items():
        rows = tables.get(key)
        if not rows or "noetic" not in rows:
            continue
        noetic = rows["noetic"]
        short = metric.title.split(":")[0] + (" mem" if key.endswith("mem") else "")
        for peer in PEERS:
            if peer in rows and (r := cost_ratio(metric, rows[peer], noetic)) is not None:
                labels.append(f"{short}: {peer} / noetic")
                values.append(r)
                colors.append(palette[peer])
        if "limit" in rows and (r := cost_ratio(metric, noetic, rows["limit"])) is not None:
            labels.append(f"{short}: noetic / limit")
            values.append(r)
            colors.append(palette["limit"])
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(labels) + 1.5))
    y = list(range(len(labels)))[::-1]
    ax.barh(y, values, color=colors)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(left=0.8, right=max(values) * 2.5)
    ax.axvline(1.0, color="black", linewidth=0.8)
    for yi, v in zip(y, values, strict=True):
        ax.text(v, yi, f" {v:.1f}×", va="center", fontsize=7)
    ax.set_xlabel("cost ratio (log scale; > 1: the first is that many times heavier)")
    ax.set_title("Peers relative to noetic, and noetic relative to the hand-written limit", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


NOTES = """\
## How it is measured

- Every measurement runs in a fresh interpreter (`bench/worker.py`); a repetition runs each
  scenario for each subject once, rotating the subject order, and the tables give the median and
  min–max over the repetitions. The machine is shared by other work, so the spread matters.
- All subjects play the same conversation against an in-process fake model with no network: the
  user asks a question, the model calls `add(a=1, b=2)`, the framework validates the arguments
  against the tool's schema, runs it, sends the result back, and the model answers. The fake
  model reports token usage so no framework needs to estimate it.
- S1: 2,000 sequential runs after 20 warm-up runs; time per model round = total / 4,000.
- S2: one run whose model streams 20,000 deltas of 4 characters, consumed through the
  framework's streaming API; every subject checks it saw all 20,000 deltas and the full text.
  noetic's two streams also run at 2,000 and 200,000 deltas (the per-delta cost by size).
  The fake model never suspends between deltas (they arrive as fast as the framework takes them).
- S3: 1,000 round trips started together (`asyncio.gather`) after 20 warm-up runs; wall time,
  and RSS growth of the worker process (peak RSS after the runs minus RSS before them).
- S3 at scale (`s3x`): the same at 10,000 round trips, for noetic and the limit only (the peers
  would take minutes); the ratio row divides its median wall time by the 1,000 run's. Row
  `noetic-evict` (S3 and `s3x`) is noetic with `max_idle_sessions=1000`: each run is a one-turn
  thread, and the default keeps every thread's session (history, stream, last response), packing
  those past the 1,000 most recently idle into bytes (SE-5); row `noetic-unpacked` (S3 and
  `s3x`) is noetic with `hot_sessions=None`, which packs none.
- Session growth (`sessions`): one harness serves 100,000 distinct threads one turn each
  (10,000 with SQLite storage), RSS sampled as they pile up; see `bench/sessions_growth.py`.
- S4: seconds to run the import statement in a fresh interpreter (interpreter start-up
  excluded), after the bytecode caches are warm. Each repetition runs 7 rounds, and a round
  imports every subject once in an order rotated every round, so all subjects share the
  machine's load alike. Its target is a ratio: noetic's median over the `pydantic floor`
  median of the same run.
- The limit is a hand-written asyncio loop doing the same work (dict messages, pydantic
  validation of the tool arguments, a deque+event hand-off for streaming): no framework can
  do less and stay correct.

- S5: 200 sequential durable round trips (the S1 conversation) after 10 warm-up ones, each on
  a new thread, into a fresh SQLite file per worker in WAL mode with `synchronous=FULL` for every
  subject (a commit is flushed to disk); time per round trip.

## Fairness notes

- noetic: one `AgentHarness` for all runs; every run is a turn on its own `thread_id` (the
  documented way to run independent conversations; reusing one thread would grow its history).
  The harness keeps each thread's session (history, stream, last response), which S3's memory
  includes; `noetic-evict` keeps at most 1,000 idle ones.
  S2 reads `h.get_full_stream()` (row `noetic`); row `noetic-items` reads `h.get_item_stream()`,
  whose in-progress snapshots carry the whole text so far (HA-5); they share the deltas and join
  the text only when read (ST-1), and the S2 consumer reads `is_complete` only.
- pydantic-ai: `FunctionModel` (its own test double) with `async def` functions (a plain `def`
  would run in a worker thread). Its streamed response estimates tokens per delta, a small cost a
  real provider model does not pay. `stream_text(delta=True, debounce_by=None)`: the default
  debounce (0.1 s) would hand fewer, larger chunks to the consumer.
- OpenAI Agents SDK: a custom `Model` subclass (the SDK ships no public fake); stream events
  are built with `model_construct` like the `openai` client builds them. Tracing is disabled
  (`RunConfig(tracing_disabled=True)`): its default exporter would call the network.
- LangGraph: the ReAct graph of its documentation (`StateGraph(MessagesState)`, a model node,
  prebuilt `ToolNode` and `tools_condition`) on a `BaseChatModel` subclass with async
  `_agenerate`/`_astream` that binds tools like a provider integration; no checkpointer. The fake
  hands LangGraph already-parsed tool arguments (it parses the JSON string once, as an
  integration does).
- S5 durable setups (`bench/subjects/durable_*.py`): noetic `storage="sqlite:///…"` with
  the default `durability="step"` (three commits a round trip: the start record, the
  `call_model` step with its whole tool loop, the closing snapshot). LangGraph compiled with
  `AsyncSqliteSaver` (langgraph-checkpoint-sqlite) and `durability="sync"` (each super-step's
  checkpoint written before the next step starts; its default `"async"` overlaps the write with
  the next step). pydantic-ai with `DBOSDurability()`, each run inside a `@DBOS.workflow()`,
  DBOS's system database on SQLite (the workflow, its result and each model request as a step);
  `synchronous` set through a SQLAlchemy connect listener. The limit: the hand-written loop
  committing each step itself (the input, then each model round with its tool results: three
  commits) on the event loop's thread. Counted with `strace`, a round trip flushes the disk
  about 3 times for noetic and the limit, 4 for pydantic-ai + DBOS and 9 for LangGraph; the
  flush's latency on a shared disk is what moves S5's wall times between runs. The OpenAI Agents SDK has no S5 row: its sessions (`SQLiteSession`) keep
  conversation history, not a resumable run, and its durable option (the Temporal integration)
  needs a Temporal server.
- S4 imports what each S1 program needs from the framework: `noetic`, `pydantic_ai`, `agents`,
  `langgraph.graph` + `langgraph.prebuilt`. `noetic deps` imports noetic's own dependencies
  (pydantic, anyio, pluggy) the way the 0.16 s floor of the original target did; pydantic loads its model
  machinery lazily, so `pydantic floor` also defines one `BaseModel`: the floor of any library
  that defines pydantic models at import time, noetic included.
"""


def s5_target_row(rows: dict[str, Stat]) -> list[str] | None:
    """S5's target (issue 17): noetic lighter than every peer's own durable setup."""
    metric, noetic = METRICS["s5"], rows.get("noetic")
    peers = [cost_ratio(metric, rows[p], noetic) for p in PEERS if p in rows] if noetic else []
    if noetic is None or not peers:
        return None
    lightest = min((r for r in peers if r is not None), default=None)
    met = "—" if lightest is None else "met" if lightest > 1 else "NOT met"
    shown = "—" if lightest is None else _ratio(lightest)
    return [metric.title, "lighter than every peer", f"{_range(metric, noetic)}; lightest peer {shown}", met]


def markdown(raw: dict[str, Any], tables: dict[str, Any]) -> str:
    """The whole report."""
    env = raw.get("environment", {})
    versions = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items())
    out = [
        "# Benchmarks: noetic beside pydantic-ai, the OpenAI Agents SDK and LangGraph",
        "",
        f"Measured {env.get('date', '?')} on {env.get('cores', '?')} cores ({env.get('cpu', '?')}), "
        f"Python {env.get('python', '?')}, commit {env.get('commit', '?')}; {raw.get('reps', '?')} repetitions "
        f"in {raw.get('minutes', 0):.1f} minutes; load average at the end "
        f"{', '.join(f'{x:.2f}' for x in env.get('load_average', ()))}.",
        f"Versions: {versions}.",
        "",
        "Reproduce with `make bench` (or `uv run --group bench python bench/run.py`; `--reps N`, "
        "`--only s1 s2 …`). Ratios compare costs: above 1 means that many times heavier.",
        "",
        "## Targets",
        "",
    ]
    target_rows = []
    for key, metric in METRICS.items():
        stat = tables.get(key, {}).get("noetic")
        if metric.target is None or stat is None:
            continue
        if metric.target_over is not None:
            target_rows.append(_ratio_target_row(metric, stat, tables[key].get(metric.target_over)))
            continue
        sign = "≥" if metric.higher_is_better else "≤"
        target_rows.append(
            [
                metric.title,
                f"{sign} {metric.fmt.format(metric.target)} {metric.unit}",
                _range(metric, stat),
                _met(metric, stat),
            ]
        )
        limit = tables.get(key, {}).get("limit")
        if metric.limit_target is not None and limit is not None:
            ratio = cost_ratio(metric, stat, limit)
            met = "—" if ratio is None else "met" if ratio <= metric.limit_target else "NOT met"
            target_rows.append(
                [
                    f"{metric.title}: noetic ÷ limit, same run",
                    f"≤ {metric.limit_target:g}×",
                    _ratio(ratio),
                    met,
                ]
            )
    if (s5 := s5_target_row(tables.get("s5", {}))) is not None:
        target_rows.append(s5)
    for subject, ratio, met in s3_scale_rows(tables):
        if subject == "noetic":
            target_rows.append(
                ["S3 at scale: 10,000-run wall time ÷ 1,000-run", f"≤ {S3_SCALE_TARGET:.0f}×", ratio, met]
            )
    target_rows += s6_target_rows(tables.get("s6", {}))
    flat = s2_flatness(tables.get("s2size", {}).get("noetic-items", {}))
    if flat is not None:
        target_rows.append(
            [
                "S2 item stream: µs per delta, largest size ÷ smallest",
                f"≤ {S2_FLATNESS_TARGET:.1f}×",
                f"{flat:.2f}×",
                "met" if flat <= S2_FLATNESS_TARGET else "NOT met",
            ]
        )
    out += [_table(["scenario", "target", "noetic median (min–max)", ""], target_rows), ""]
    out += ["## Results", ""]
    for key, metric in METRICS.items():
        if key in tables:
            out += [f"### {metric.title} ({metric.unit})", ""]
            out += [
                _table(
                    ["subject", f"median (min–max) {metric.unit}", "peer / noetic"],
                    scenario_rows(key, tables[key]),
                ),
                "",
            ]
    if "s3x" in tables:
        out += [
            "### S3 at scale: 10,000 ÷ 1,000 concurrent round trips (wall time)",
            "",
            _table(
                ["subject", "10,000-run median ÷ 1,000-run median", f"≤ {S3_SCALE_TARGET:.0f}×"],
                s3_scale_rows(tables),
            ),
            "",
        ]
    if "sessions" in tables:
        out += [
            "### Session growth: a long-lived harness serving one-turn threads",
            "",
            "RSS growth over a warmed-up harness (after `gc.collect()`), sampled every tenth of the "
            "threads (`bench/sessions_growth.py`): `keep` keeps every session, `evict` keeps at most "
            "1,000 idle ones (no storage), `evict-sqlite` the same with `storage=` SQLite.",
            "",
            _table(SESSION_HEADER, session_rows(tables["sessions"])),
            "",
        ]
    if "growth" in tables:
        out += [
            "### noetic growth scenarios",
            "",
            "Median µs per unit of work at each size (min–max); the last column is the largest size's "
            "cost per unit over the smallest's (1× = linear in the work).",
            "",
            _table(
                ["scenario", "unit", "size: µs per unit", "largest / smallest"], growth_rows(tables["growth"])
            ),
            "",
        ]
    if "s2size" in tables:
        out += [
            "### S2 per-delta cost by size",
            "",
            "Median µs per delta at each number of deltas; the last column is the largest size's cost "
            "per delta over the smallest's (1× = linear in the deltas).",
            "",
            _table(["subject", "deltas: µs per delta", "largest / smallest"], s2_size_rows(tables["s2size"])),
            "",
        ]
    out += ["## Ratios", "", "![ratios](ratios.png)", "", NOTES]
    if ANALYSIS.exists():
        out += ["", ANALYSIS.read_text().strip(), ""]
    return "\n".join(out).rstrip() + "\n"


def write(raw: dict[str, Any], tables: dict[str, Any], out: Path) -> None:
    """Write report.md and ratios.png into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(markdown(raw, tables))
    plot(tables, out / "ratios.png")
