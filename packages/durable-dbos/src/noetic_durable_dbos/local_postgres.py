"""`LocalPostgres`: a throwaway PostgreSQL server on a temporary data directory.

For tests, demos and benchmarks on one machine: `initdb` into a fresh directory, a server on
a free port of 127.0.0.1 (its unix socket inside that directory, never the system one), trust
authentication for the superuser `noetic`, and a database `noetic`. The server binaries come
from `NOETIC_PG_BIN`, Debian's `/usr/lib/postgresql/*/bin`, or PATH (the repository's
`scripts/ensure-postgres.sh` installs them). PostgreSQL refuses to run as root, so under root
the server runs as the `postgres` OS user, which owns the data directory.

    with LocalPostgres() as pg:
        store = PostgresCheckpointStore(pg.url)
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from noetic.errors import NoeticConfigError

__all__ = ["LocalPostgres", "find_postgres_bin"]

#: The database and superuser every `LocalPostgres` creates.
DATABASE = "noetic"
USER = "noetic"


def find_postgres_bin() -> Path:
    """The directory holding `initdb` and `pg_ctl`, or `POSTGRES_NOT_INSTALLED`."""
    candidates = [os.environ.get("NOETIC_PG_BIN", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    found = shutil.which("initdb")
    if found:
        candidates.append(str(Path(found).parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").is_file():
            return Path(candidate)
    raise NoeticConfigError(
        "POSTGRES_NOT_INSTALLED",
        "no PostgreSQL server binaries (initdb, pg_ctl) were found",
        hint="Run scripts/ensure-postgres.sh (installs Debian's postgresql package as root), or set "
        "NOETIC_PG_BIN to the directory holding initdb.",
    )


def _version_key(path: str) -> tuple[int, ...]:
    digits = Path(path).parent.name
    return tuple(int(part) for part in digits.split(".") if part.isdigit())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalPostgres:
    """One PostgreSQL server on its own data directory; `start`, `restart`, `stop`.

    `durable=False` turns `fsync` off: faster, and safe against a crash of the server process
    (the operating system still holds every write), not against a crash of the machine.
    """

    def __init__(self, *, durable: bool = True, max_connections: int = 200):
        self.bin = find_postgres_bin()
        self.durable = durable
        self.max_connections = max_connections
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="noetic-pg-"))
        self.data = self.root / "data"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")

    @property
    def url(self) -> str:
        """The connection URL of the `noetic` database (TCP on 127.0.0.1)."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *argv: str, timeout: float = 120.0) -> None:
        command = [str(self.bin / argv[0]), *argv[1:]]
        # as root, drop to the `postgres` user in the child itself (no `runuser` on PATH needed)
        user = "postgres" if self._as_postgres else None
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            user=user,
            group=user,
            extra_groups=[] if user else None,
        )
        if done.returncode != 0:
            raise NoeticConfigError(
                "POSTGRES_FAILED",
                f"{argv[0]} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-2000:]}",
                hint=f"See the server log in {self.root / 'server.log'}.",
            )

    def start(self) -> LocalPostgres:
        """Create the cluster on first use, start the server and wait until it accepts connections."""
        if not (self.data / "PG_VERSION").exists():
            self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        options = [
            "-c listen_addresses=127.0.0.1",
            f"-c port={self.port}",
            f"-c unix_socket_directories={self.root}",
            f"-c max_connections={self.max_connections}",
        ]
        if not self.durable:
            options += ["-c fsync=off", "-c full_page_writes=off"]
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60",
            "-o", " ".join(options), "start",
        )  # fmt: skip
        self._ensure_database()
        return self

    def _ensure_database(self) -> None:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(
                    f"postgresql://{USER}@127.0.0.1:{self.port}/postgres", autocommit=True, connect_timeout=5
                ) as conn:
                    if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                        return
                    conn.execute(f'CREATE DATABASE "{DATABASE}"')
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self, *, mode: str = "fast") -> None:
        """Stop the server (`mode` is pg_ctl's: smart, fast or immediate)."""
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-m", mode, "stop")

    def restart(self, *, mode: str = "immediate", down_for: float = 0.0) -> None:
        """Stop the server (`immediate` = as if it crashed), stay down `down_for` seconds, start it."""
        self.stop(mode=mode)
        time.sleep(down_for)
        self.start()

    def remove(self) -> None:
        """Stop the server and delete its data directory."""
        try:
            self.stop(mode="immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()
