"""Per-round cost of OpenTelemetry tracing, side by side: the S1 round trip (two model rounds,
one tool call) of `subjects.noetic_subject` under four settings, reported as ratios to
`tracing=False`:

- `off`: `AgentHarness(tracing=False)`;
- `unconfigured`: the default, with no tracer provider set anywhere (the API's proxy);
- `sampled out`: an SDK `TracerProvider` whose sampler drops every span (non-recording);
- `recorded`: an SDK `TracerProvider` recording every span (6 per round trip) into an
  exporter that discards them, so the figure is Noetic's and the SDK's, not an exporter's.

    uv run python bench/tracing.py [ROUND_TRIPS]      # default 400; the machine is shared

Times are CPU time of this process. Settings are interleaved over several repetitions and the
fastest repetition of each is kept (the one least disturbed by other load on a shared machine).
"""

from __future__ import annotations

import gc
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


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 400)
