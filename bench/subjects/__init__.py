"""One module per framework under test, all with the same shape (see `bench/subjects/common.py`).

Each module exposes:

- `NAME`: the label in the report;
- `session()`: an async context manager yielding `run_once(i) -> str`, one S1 round trip
  (user question, one `add` tool call, final answer), built once and reused like an agent;
- `stream(chunks) -> tuple[int, str]`: one S2 run whose fake model streams `chunks`, consumed
  through the framework's streaming API; returns (deltas seen by the consumer, final text).
"""
