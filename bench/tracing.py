"""Per-round cost of OpenTelemetry tracing, side by side: the S1 round trip (two model rounds,
one tool call) of `subjects.noetic_subject` under four settings, reported as ratios to
`tracing=False`:

- `off`: `AgentHarness(tracing=False)`;
- `unconfigured`: the default, with no tracer provider set anywhere (the API's proxy);
- `sampled out`: an SDK `TracerProvider` whose sampler drops every span (non-recording);
- `recorded`: an SDK `TracerProvider` recording every span (6 per round trip) into an
  exporter that discards them, so the figure is Noetic's and the SDK's, not an exporter's.

    uv run python bench/tracing.py [ROUND_TRIPS]      # default 400; the machine is shared
    uv run python bench/tracing.py --instructions     # needs valgrind; deterministic

Times are CPU time of this process. Settings are interleaved over several repetitions and the
fastest repetition of each is kept (the one least disturbed by other load on a shared machine). `--instructions` counts
instructions instead, with valgrind's cachegrind: each setting runs 20 and 220 round trips in
a child process and the difference, per model round, is what 200 round trips cost — a count
that load on the machine does not change.
"""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

sys.path.insert(0, str(Path(__file__).resolve().parent))
from subjects.common import QUESTION
from subjects.noetic_subject import FakeModel, _agent

REPETITIONS = 7


class Discard(SpanExporter):
    """Accepts every span and keeps none."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def recording_provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Discard()))
    return provider


SETTINGS: dict[str, dict[str, Any]] = {
    "off": {"tracing": False},
    "unconfigured": {},
    "sampled out": {"tracer_provider": TracerProvider(sampler=ALWAYS_OFF)},
    "recorded": {"tracer_provider": recording_provider()},
}


async def seconds_per_round(options: dict[str, Any], trips: int) -> float:
    async with nt.AgentHarness("bench", agent_graph=_agent(), model=FakeModel(), **options) as h:
        for i in range(20):  # warm-up
            await h.run(QUESTION, thread_id=f"w{i}")
        gc.collect()
        started = time.process_time()
        for i in range(trips):
            await h.run(QUESTION, thread_id=f"t{i}")
        return (time.process_time() - started) / (2 * trips)


async def main(trips: int) -> None:
    samples: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for _ in range(REPETITIONS):
        for name, options in SETTINGS.items():
            samples[name].append(await seconds_per_round(options, trips))
    base = min(samples["off"])
    print(f"per model round, best of {REPETITIONS} x {trips} round trips (ratio to tracing=False)")
    for name, values in samples.items():
        best = min(values)
        print(f"  {name:<13} {best * 1e6:7.1f} µs   x{best / base:.3f}")


async def run_setting(name: str, trips: int) -> None:
    async with nt.AgentHarness("bench", agent_graph=_agent(), model=FakeModel(), **SETTINGS[name]) as h:
        for i in range(trips):
            await h.run(QUESTION, thread_id=f"t{i}")


def instructions(name: str, trips: int) -> int:
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run(
        [*command, sys.executable, __file__, "--child", name, str(trips)], capture_output=True, text=True
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"cachegrind gave no count for {name}: {done.stderr[-400:]}")
    return int(found.group(1).replace(",", ""))


def count_instructions() -> None:
    per_round = {name: (instructions(name, 220) - instructions(name, 20)) / 400 for name in SETTINGS}
    base = per_round["off"]
    print("instructions per model round (cachegrind; ratio to tracing=False)")
    for name, count in per_round.items():
        print(f"  {name:<13} {count:9,.0f}   x{count / base:.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        anyio.run(run_setting, sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["--instructions"]:
        count_instructions()
    else:
        anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 400)
