"""The `noetic` entry point of noetic-durable-dbos: the `postgresql://` checkpoint store and
the `noetic worker` command."""

from __future__ import annotations

import noetic
from noetic.registry import Register


@noetic.hookimpl
def register_checkpoint_stores(register: Register) -> None:
    """`storage="postgresql://..."` (and `postgres://`) opens a `PostgresCheckpointStore`."""
    register("postgresql", "noetic_durable_dbos.store:postgres_store_from_url")
    register("postgres", "noetic_durable_dbos.store:postgres_store_from_url")


@noetic.hookimpl
def register_commands(register: Register) -> None:
    """`noetic worker`, `noetic enqueue` and `noetic result`."""
    register("worker", "noetic_durable_dbos.cli:worker_command")
    register("enqueue", "noetic_durable_dbos.cli:enqueue_command")
    register("result", "noetic_durable_dbos.cli:result_command")
