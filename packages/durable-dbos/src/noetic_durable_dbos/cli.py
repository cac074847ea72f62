"""The `noetic worker`, `noetic enqueue` and `noetic result` commands (registered through the
`register_commands` hook): start a worker, put an execution on the queue, wait for its result."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from typing import Any

import anyio
from noetic.errors import NoeticError
from noetic.plugin_commands import PluginCommand

__all__ = ["enqueue_command", "result_command", "worker_command"]


def _storage(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--storage", required=True, help="postgresql:// URL shared by every worker")
    parser.add_argument("--queue", default="noetic", help="DBOS queue name (default: noetic)")


def _worker_arguments(parser: argparse.ArgumentParser) -> None:
    _storage(parser)
    parser.add_argument("agents", nargs="+", help="module:attr of each agent (a step or a harness factory)")
    parser.add_argument("--concurrency", type=int, default=4, help="executions at once on this worker")
    parser.add_argument("--global-concurrency", type=int, help="executions at once across all workers")
    parser.add_argument("--executor-id", help="this worker's DBOS executor id (default: host-pid-random)")
    parser.add_argument("--heartbeat", type=float, default=2.0, help="seconds between heartbeats")
    parser.add_argument(
        "--dead-after", type=float, default=10.0, help="seconds of silence before a worker is dead"
    )
    parser.add_argument("--poll-interval", type=float, default=0.5, help="seconds between queue polls")
    parser.add_argument("--model", help="model id for agents given as a step")


def _run_worker(args: argparse.Namespace) -> int:
    from noetic_durable_dbos.worker import Worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        worker = Worker(
            args.storage,
            args.agents,
            queue=args.queue,
            concurrency=args.concurrency,
            global_concurrency=args.global_concurrency,
            executor_id=args.executor_id,
            heartbeat=args.heartbeat,
            dead_after=args.dead_after,
            poll_interval=args.poll_interval,
            model=args.model,
        )
    except NoeticError as exc:
        print(f"noetic worker: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f"worker {worker.executor_id} serving queue {args.queue!r}", flush=True)
    try:
        worker.serve(stop)
    except Exception as exc:  # noqa: BLE001 - a worker that cannot go on says why, without a traceback
        print(f"noetic worker: stopped: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def _enqueue_arguments(parser: argparse.ArgumentParser) -> None:
    _storage(parser)
    parser.add_argument("agent", help="module:attr of the agent, as the workers were started with")
    parser.add_argument("--input", default="", help="the input: JSON (e.g. '{\"n\": 3}'), else plain text")
    parser.add_argument("--execution-id", help="the execution id (default: a new one)")


def _parse_input(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _run_enqueue(args: argparse.Namespace) -> int:
    from noetic_durable_dbos.runner import DbosRunner

    async def enqueue() -> str:
        async with DbosRunner(args.storage, queue=args.queue) as runner:
            return await runner.enqueue(args.agent, _parse_input(args.input), execution_id=args.execution_id)

    try:
        print(anyio.run(enqueue))
    except NoeticError as exc:
        print(f"noetic enqueue: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    return 0


def _result_arguments(parser: argparse.ArgumentParser) -> None:
    _storage(parser)
    parser.add_argument("execution_id", help="the id printed by noetic enqueue")
    parser.add_argument("--timeout", type=float, help="seconds to wait (default: until it finishes)")


def _run_result(args: argparse.Namespace) -> int:
    from noetic_durable_dbos.runner import DbosRunner, ExecutionResult

    async def wait() -> ExecutionResult:
        async with DbosRunner(args.storage, queue=args.queue) as runner:
            return await runner.result(args.execution_id, timeout=args.timeout)

    try:
        result = anyio.run(wait)
    except NoeticError as exc:
        print(f"noetic result: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    print(json.dumps({"execution_id": result.execution_id, **result.to_record()}, indent=2))
    return 0


worker_command = PluginCommand(
    help="run queued executions on this machine (DBOS on Postgres)",
    add_arguments=_worker_arguments,
    run=_run_worker,
)
enqueue_command = PluginCommand(
    help="put an execution on the workers' queue; prints its id",
    add_arguments=_enqueue_arguments,
    run=_run_enqueue,
)
result_command = PluginCommand(
    help="wait for a queued execution and print its result as JSON",
    add_arguments=_result_arguments,
    run=_run_result,
)
