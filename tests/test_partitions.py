"""Retention: day partitions listed, created ahead, dropped as partitions while
ingest runs."""

import threading
from datetime import datetime, timedelta, timezone

import pytest

from dedup_pg import Deduper
from dedup_pg.partitions import TABLES, drop_older_than, ensure, list_partitions

NOW = datetime.now(timezone.utc)


def _days(conn):
    return {(p.table, p.day) for p in list_partitions(conn)}


def test_ensure_creates_every_table_days_ahead(dd):
    created = ensure(dd.conn, 2)
    today = NOW.date()
    expected = {(t, today + timedelta(d)) for t in TABLES for d in range(3)}
    assert expected <= _days(dd.conn)
    assert created == len(expected)  # a fresh database has no partitions yet
    assert ensure(dd.conn, 2) == 0  # idempotent


def test_drop_old_days_keeps_the_window_and_ingest_runs_meanwhile(dd, dsn, sina):
    old = [
        {**{k: a[k] for k in ("id", "title", "body")}, "seen_at": NOW - timedelta(days=40 + i)}
        for i, a in enumerate(sina[:3])
    ]
    recent = [{**{k: a[k] for k in ("id", "title", "body")}, "seen_at": NOW} for a in sina[3:6]]
    list(dd.ingest_many(old + recent))
    assert dd.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 6
    with pytest.raises(ValueError, match="refusing to drop days the checks still look back over"):
        drop_older_than(dd.conn, 5)  # window_days is 7

    errors = []

    def keep_ingesting():
        try:
            with Deduper(dsn, migrate=False) as writer:
                for a in sina[10:60]:
                    writer.ingest({"id": a["id"], "title": a["title"], "body": a["body"]})
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    writer = threading.Thread(target=keep_ingesting)
    writer.start()
    dropped = drop_older_than(dd.conn, 30)
    writer.join(timeout=120)
    assert not errors
    assert len(dropped) == 3 * len(TABLES)
    assert all(
        (t, (NOW - timedelta(days=40 + i)).date()) not in _days(dd.conn)
        for t in TABLES
        for i in range(3)
    )
    remaining = {r[0] for r in dd.conn.execute("SELECT external_id FROM documents")}
    assert {a["id"] for a in sina[3:6]} <= remaining and not (
        {a["id"] for a in sina[:3]} & remaining
    )
    # the dropped days' texts are new again (their digests are outside the window)
    assert (
        dd.ingest({"id": "again", "title": sina[0]["title"], "body": sina[0]["body"]}).verdict
        == "new"
    )


def test_drop_refuses_all_history_unless_forced(dd):
    dd.set_setting("window_days", 0)
    with pytest.raises(ValueError, match="all history"):
        drop_older_than(dd.conn, 400)
    assert drop_older_than(dd.conn, 400, force=True) == []
