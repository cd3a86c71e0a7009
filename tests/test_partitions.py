"""Retention: day (and lookup week) partitions listed, created ahead, dropped as
partitions while ingest runs; ended weeks' indexes packed (``partitions compact``)."""

import threading
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from dedup_pg import Deduper
from dedup_pg.partitions import (
    TABLES,
    compact_closed_weeks,
    drop_older_than,
    ensure,
    list_partitions,
)

from conftest import article_item, first_sentence_cut

NOW = datetime.now(timezone.utc)
WEEKLY = ("document_clauses", "document_minhash_bands", "document_simhash_bands")  # lookup tables


def _days(conn):
    return {(p.table, p.day) for p in list_partitions(conn)}


def _monday(day):
    """The first day of the week partition that holds ``day``."""
    return day - timedelta(day.weekday())


def _partitions_of(day):
    """(table, first day) of the partitions that hold ``day``."""
    return {(t, _monday(day) if t in WEEKLY else day) for t in TABLES}


def test_ensure_creates_every_table_days_ahead(dd):
    today = datetime.now(timezone.utc).date()  # not NOW: a run may cross midnight
    created = ensure(dd.conn, 2)
    expected = set().union(*(_partitions_of(today + timedelta(d)) for d in range(3)))
    assert expected <= _days(dd.conn)
    assert created == len(expected)  # a fresh database has no partitions yet
    assert ensure(dd.conn, 2) == 0  # idempotent
    weeks = [p for p in list_partitions(dd.conn) if p.table in WEEKLY]
    assert weeks and all(p.day.weekday() == 0 and p.last_day == p.day + timedelta(6) for p in weeks)
    assert all(p.last_day == p.day for p in list_partitions(dd.conn) if p.table not in WEEKLY)
    # what psql's \df+ tells an analyst names every table it partitions, and how
    # (it named four tables, by day, until revision 0065)
    comment = dd.conn.execute(
        "SELECT obj_description('dedup_ensure_partitions(date, date)'::regprocedure)"
    ).fetchone()[0]
    assert {p.table for p in list_partitions(dd.conn)} == set(TABLES)
    assert all(table in comment for table in TABLES), comment
    assert "day partition" in comment and "ISO-week partitions" in comment


def test_drop_old_days_keeps_the_window_and_ingest_runs_meanwhile(dd, dsn, sina):
    dd.set_setting("seen_at_past_days", 0)  # days 40+ back: a backfill
    old = [article_item(a, NOW - timedelta(days=40 + i)) for i, a in enumerate(sina[:3])]
    recent = [article_item(a, NOW) for a in sina[3:6]]
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
    old_parts = set().union(
        *(_partitions_of((NOW - timedelta(days=40 + i)).date()) for i in range(3))
    )
    assert len(dropped) == len(old_parts)  # the weeks of 40-42 days ago ended before the cutoff
    assert not old_parts & _days(dd.conn)
    remaining = {r[0] for r in dd.conn.execute("SELECT external_id FROM documents")}
    assert {a["id"] for a in sina[3:6]} <= remaining and not (
        {a["id"] for a in sina[:3]} & remaining
    )
    # the exact layer keeps no digest of a dropped day: one a stored document
    assert dd.conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE d.doc_id IS NULL) FROM document_digests g"
        " LEFT JOIN documents d ON d.doc_id = g.doc_id AND d.seen_at = g.seen_at"
    ).fetchone() == (len(remaining), 0)
    # the dropped days' texts are new again (their digests are outside the window)
    assert (
        dd.ingest({"id": "again", "title": sina[0]["title"], "body": sina[0]["body"]}).verdict
        == "new"
    )


def test_a_kept_exact_copy_keeps_its_text_when_its_originals_day_is_dropped(dd, sina):
    """An exact copy is kept as a candidate whose text is its original's (body
    NULL). Dropping the original's day keeps the copy's day: before revision
    0038 the copy was left without a text, and restoring it failed."""
    dd.set_setting("seen_at_past_days", 0)
    a = sina[7]
    first = {"id": "first", "title": a["title"], "body": a["body"], "seen_at": NOW - timedelta(40)}
    copy = {**first, "id": "copy", "source": "elsewhere", "seen_at": NOW - timedelta(35)}
    list(dd.ingest_many([first]))
    v = dd.ingest(copy)
    assert (v.verdict, v.layer) == ("duplicate", "exact")
    body = "SELECT body FROM duplicate_candidates WHERE candidate_id = %s"
    assert dd.conn.execute(body, [v.candidate_id]).fetchone() == (None,)  # by reference

    dropped = drop_older_than(dd.conn, 38)
    assert any(name.startswith("documents_p") for name in dropped)
    assert dd.conn.execute("SELECT count(*) FROM documents").fetchone() == (0,)
    assert dd.conn.execute(body, [v.candidate_id]).fetchone() == (a["body"],)
    restored = dd.conn.execute(
        "SELECT doc_id FROM restore_candidate(%s, 'still wanted')", [v.candidate_id]
    ).fetchone()
    dd.conn.commit()
    assert dd.conn.execute(
        "SELECT external_id, body FROM documents WHERE doc_id = %s", [restored[0]]
    ).fetchone() == ("copy", a["body"])


def test_the_drop_command_counts_what_it_dropped_a_line_a_table(dsn, dd, sina):
    """`dedup-pg partitions drop` prints the count, then each table's count
    with its first and last partition: not every name on one line."""
    from click.testing import CliRunner

    from dedup_pg.cli import main

    dd.set_setting("seen_at_past_days", 0)
    old = [article_item(a, NOW - timedelta(days=60 + i)) for i, a in enumerate(sina[:3])]
    list(dd.ingest_many(old))
    parts = set().union(*(_partitions_of((NOW - timedelta(days=60 + i)).date()) for i in range(3)))
    result = CliRunner().invoke(
        main, ["partitions", "drop", "--older-than", "30", "--dsn", dsn], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"dropped {len(parts)} partitions"
    days = sorted((NOW - timedelta(days=60 + i)).strftime("%Y%m%d") for i in range(3))
    assert f"  documents: 3 (documents_p{days[0]} .. documents_p{days[-1]})" in lines
    assert len(lines) == 1 + len({table for table, _ in parts})
    assert sum(int(line.split(": ")[1].split(" ")[0]) for line in lines[1:]) == len(parts)


def test_drop_refuses_all_history_unless_forced(dd):
    dd.set_setting("window_days", 0)
    with pytest.raises(ValueError, match="all history"):
        drop_older_than(dd.conn, 400)
    assert drop_older_than(dd.conn, 400, force=True) == []


def _lookup_rows(conn) -> tuple[int, int, int]:
    """Clause rows, documents with MinHash band values and their values, in
    each layout of the bands (a row a value before revision 0019, an array a
    document from it, computed from the signature from revision 0049; 32
    values a document before revision 0021, 16 from it)."""
    columns = {
        r[0]
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'document_minhash_bands'"
        )
    }
    if "band_keys" in columns:
        values = "sum(cardinality(band_keys))"
    elif "signature" in columns:
        values = "sum(cardinality(dedup_minhash_bands(signature)))"
    else:
        values = "count(*)"
    return conn.execute(
        f"SELECT (SELECT count(*) FROM document_clauses),"
        f" (SELECT count(DISTINCT doc_id) FROM document_minhash_bands),"
        f" (SELECT coalesce({values}, 0) FROM document_minhash_bands)"
    ).fetchone()


def test_lookup_tables_move_between_day_and_week_partitions_with_their_rows(dd, dsn, sina):
    """Revision 0010 moves document_clauses and document_minhash_bands to week
    partitions (and back on downgrade) without losing a row: near copies are
    still found through them. (Going down through revision 0025 gives every
    clause its row again, and coming back up keeps them.)"""
    from dedup_pg import database

    docs = [article_item(a, NOW - timedelta(days=i % 10)) for i, a in enumerate(sina[:20])]
    list(dd.ingest_many(docs))
    before = _lookup_rows(dd.conn)
    assert before[0] > 0 and before[1] > 0
    every_clause = dd.conn.execute("SELECT sum(clause_count) FROM documents").fetchone()[0]
    assert every_clause > before[0]  # long texts have rows for a sample of their clauses
    copies = [
        {**d, "id": f"copy-{d['id']}", "body": d["body"] + "\n(本文来自合作媒体，转载请注明出处)"}
        for d in docs
    ]

    def layers(deduper):
        return sorted((v.verdict, v.matched_id) for v in deduper.check_many(copies))

    expected = layers(dd)
    assert sum(v == "duplicate" for v, _ in expected) >= 18

    database.downgrade(dsn, "0009")
    with Deduper(dsn, migrate=False) as old:
        assert _lookup_rows(old.conn) == (every_clause, before[1], 32 * before[1])
        names = {p[2] for p in old.conn.execute("SELECT * FROM dedup_partitions")}
        assert names and all("_p" in n and "_w" not in n for n in names)
        assert layers(old) == expected
    database.migrate(dsn)
    with Deduper(dsn, migrate=False) as new:
        assert _lookup_rows(new.conn) == (every_clause, *before[1:])
        weeks = [p for p in list_partitions(new.conn) if p.table in WEEKLY]
        assert weeks and all(p.name.startswith(f"{p.table}_w") for p in weeks)
        assert layers(new) == expected


def test_simhash_bands_move_into_their_lookup_table_and_back(dd, dsn, sina):
    """Revision 0012 moves the SimHash bands from four indexes of documents into
    document_simhash_bands (week partitions), and back on downgrade: one-character
    edits are found by the SimHash layer, the same documents, either way."""
    from dedup_pg import database

    docs = [article_item(a, NOW - timedelta(days=i % 9)) for i, a in enumerate(sina[:24])]
    list(dd.ingest_many(docs))
    n_docs = dd.conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert (
        dd.conn.execute("SELECT count(*) FROM document_simhash_bands").fetchone()[0] == 4 * n_docs
    )
    edits = [{**d, "id": f"edit-{d['id']}", "body": d["body"].replace("的", "之", 1)} for d in docs]

    def verdicts(deduper):
        return sorted((v.verdict, v.layer, v.matched_id) for v in deduper.check_many(edits))

    expected = verdicts(dd)
    assert sum(layer == "simhash" for _, layer, _ in expected) >= 20
    database.downgrade(dsn, "0011")
    with Deduper(dsn, migrate=False) as old:
        indexes = {
            r[0]
            for r in old.conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'documents'"
            )
        }
        assert {f"documents_simhash_band{b}_idx" for b in range(4)} <= indexes
        assert (
            old.conn.execute("SELECT to_regclass('document_simhash_bands')").fetchone()[0] is None
        )
        assert verdicts(old) == expected
        list(old.ingest_many([{**sina[30], "seen_at": NOW}]))  # stored while the bands are indexes
    database.migrate(dsn)
    with Deduper(dsn, migrate=False) as new:
        rows = new.conn.execute(
            "SELECT count(*), count(DISTINCT (b.doc_id, b.seen_at)) FROM document_simhash_bands b"
            " JOIN documents d ON d.doc_id = b.doc_id AND d.seen_at = b.seen_at"
            " AND b.band_key = ANY (dedup_simhash_band_keys(d.simhash))"
        ).fetchone()
        assert rows == (4 * (n_docs + 1), n_docs + 1)
        weeks = [p for p in list_partitions(new.conn) if p.table == "document_simhash_bands"]
        assert weeks and all(p.name.startswith("document_simhash_bands_w") for p in weeks)
        assert verdicts(new) == expected


def test_simhash_band_rows_get_their_tails_on_upgrade_and_lose_them_on_downgrade(dd, dsn, sina):
    """Revision 0067 gives every stored band row its tail and indexes (band_key,
    tail) INCLUDE (seen_at); its downgrade restores the index that carried
    simhash and doc_id. One-character edits get the same verdicts from the
    SimHash layer at 0066, at 0067, and at 0067 after an upgrade."""
    from dedup_pg import database

    docs = [article_item(a, NOW - timedelta(days=i % 9)) for i, a in enumerate(sina[40:64])]
    list(dd.ingest_many(docs))
    edits = [{**d, "id": f"edit-{d['id']}", "body": d["body"].replace("的", "之", 1)} for d in docs]

    def verdicts(deduper):
        return sorted((v.verdict, v.layer, v.matched_id) for v in deduper.check_many(edits))

    def index(conn):
        return conn.execute(
            "SELECT pg_get_indexdef('document_simhash_bands_key_idx'::regclass)"
        ).fetchone()[0]

    expected = verdicts(dd)
    assert sum(layer == "simhash" for _, layer, _ in expected) >= 20
    database.downgrade(dsn, "0066")
    with Deduper(dsn, migrate=False) as old:
        assert "INCLUDE (simhash, seen_at, doc_id)" in index(old.conn)
        assert (
            old.conn.execute(
                "SELECT count(*) FROM information_schema.columns"
                " WHERE table_name = 'document_simhash_bands' AND column_name = 'tail'"
            ).fetchone()[0]
            == 0
        )
        assert verdicts(old) == expected
        list(old.ingest_many([{**sina[70], "seen_at": NOW}]))  # stored without a tail
    database.migrate(dsn)
    with Deduper(dsn, migrate=False) as new:
        assert "(band_key, tail) INCLUDE (seen_at)" in index(new.conn)
        rows = new.conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE b.tail = dedup_simhash_tail(d.simhash,"
            " b.band_key >> 16) AND b.simhash = d.simhash)"
            " FROM document_simhash_bands b JOIN documents d USING (doc_id, seen_at)"
        ).fetchone()
        assert rows == (4 * (len(docs) + 1), 4 * (len(docs) + 1))
        assert verdicts(new) == expected


VACUUMED_EVERY = [
    "autovacuum_vacuum_insert_threshold=20000",
    "autovacuum_vacuum_insert_scale_factor=0",
]


def _partition_options(conn) -> dict[str, list[str] | None]:
    """Each lookup week partition's storage settings, by table."""
    rows = conn.execute(
        "SELECT p.relname, c.reloptions FROM pg_inherits i"
        " JOIN pg_class p ON p.oid = i.inhparent JOIN pg_class c ON c.oid = i.inhrelid"
        " WHERE p.relname = ANY (%s)",
        [list(WEEKLY)],
    ).fetchall()
    out: dict[str, list] = {}
    for table, options in rows:
        out.setdefault(table, []).append(options)
    return out


def test_simhash_band_partitions_are_vacuumed_every_20000_rows(dd, dsn):
    """Revision 0068: the SimHash probe is an index-only scan, so its week
    partitions are vacuumed (their pages marked all-visible) after every 20,000
    rows, those that exist on upgrade and those created after; the downgrade
    takes the settings off again. The other tables keep the defaults."""
    from dedup_pg import database

    ensure(dd.conn, 9)
    options = _partition_options(dd.conn)
    assert len(options["document_simhash_bands"]) >= 2
    assert all(o == VACUUMED_EVERY for o in options["document_simhash_bands"])
    assert all(o is None for t in WEEKLY[:2] for o in options[t])
    database.downgrade(dsn, "0067")
    with psycopg.connect(dsn) as conn:
        options = _partition_options(conn)
        assert all(o is None for t in WEEKLY for o in options[t])
        conn.execute("SELECT dedup_ensure_partitions(current_date + 20, current_date + 20)")
        conn.commit()
        before = len(_partition_options(conn)["document_simhash_bands"])
    database.migrate(dsn)
    with psycopg.connect(dsn) as conn:
        options = _partition_options(conn)
        assert len(options["document_simhash_bands"]) == before  # those made at 0067 too
        assert all(o == VACUUMED_EVERY for o in options["document_simhash_bands"])
        assert all(o is None for t in WEEKLY[:2] for o in options[t])


def test_ingest_runs_with_generic_plans(dd):
    # custom plans re-plan each statement over every day partition in the window
    config = dd.conn.execute(
        "SELECT proconfig FROM pg_proc WHERE oid = 'dedup_ingest(jsonb, boolean, jsonb)'::regprocedure"
    ).fetchone()[0]
    assert config == ["plan_cache_mode=force_generic_plan"]


def test_one_clause_pass_gives_revision_0012s_verdicts(dd, dsn, sina):
    """Revision 0013 probes the clause index once per check (the holders it counts
    are the containment layer's candidates): with a boilerplate footer in every
    stored text, truncated copies, copies with an ad and long texts quoting a stored
    one get the verdicts revision 0012 gave them."""
    from dedup_pg import database

    footer = "本网所有内容均由网友发布，转载请注明出处并保留本文链接，谢谢合作。"
    docs = [
        {
            "id": a["id"],
            "title": a["title"],
            "body": a["body"] + "\n" + footer,
            "seen_at": NOW - timedelta(days=i % 9),
        }
        for i, a in enumerate(sina[:30])
    ]
    list(dd.ingest_many(docs))
    probes = []
    for i, d in enumerate(docs[:20]):
        lines = d["body"].split("\n")
        probes += [
            {**d, "id": f"cut-{i}", "title": None, "body": "\n".join(lines[: len(lines) * 2 // 3])},
            {**d, "id": f"ad-{i}", "body": d["body"] + "\n扫码关注公众号，领取新人专享优惠券。"},
            {**d, "id": f"quote-{i}", "body": d["body"] + "\n" + sina[40 + i]["body"]},
        ]
    for i, a in enumerate(sina[60:66]):  # new text on the site's template: new
        lead = "。".join(a["body"].split("。")[:2]) + "。"
        probes.append({"id": f"short-{i}", "title": a["title"], "body": lead + "\n" + footer})

    def verdicts(deduper):
        return [
            (v.verdict, v.layer, v.matched_id, round(v.score or 0.0, 6))
            for v in deduper.check_many(probes)
        ]

    expected = verdicts(dd)
    layers = [layer for _, layer, _, _ in expected]
    assert layers.count("containment") >= 15
    assert [v for v, *_ in expected[-6:]] == ["new"] * 6
    database.downgrade(dsn, "0012")
    with Deduper(dsn, migrate=False) as old:
        assert verdicts(old) == expected
    database.migrate(dsn)
    with Deduper(dsn, migrate=False) as new:
        assert verdicts(new) == expected


def test_a_check_does_not_lock_the_days_kept_outside_its_window(dd, sina):
    """dedup_ingest's statements run on generic plans, which lock every
    partition a statement could read, each check, whatever run-time pruning
    then reads. A statement over documents run for every text would make each
    check pay for every day kept (and a batch hold a lock per day: with two
    years kept, concurrent batches ran out of lock table). A new text that
    shares nothing with the stored ones, checked with sixty days kept, locks
    no more of documents' day partitions than the window holds."""
    today = datetime.now(timezone.utc).date()
    dd.conn.execute("SELECT dedup_ensure_partitions(%s, %s)", [today - timedelta(60), today])
    days_kept = dd.conn.execute(
        "SELECT count(*) FROM pg_inherits WHERE inhparent = 'documents'::regclass"
    ).fetchone()[0]
    assert days_kept > 60
    list(dd.ingest_many([{k: a[k] for k in ("id", "title", "body")} for a in sina[:20]]))
    incoming = sina[40]
    assert len(incoming["body"]) > 500  # a MinHash signature: the MinHash probe runs
    locked_days = """
        SELECT count(*) FROM pg_locks l JOIN pg_inherits i ON i.inhrelid = l.relation
         WHERE l.pid = pg_backend_pid() AND i.inhparent = 'documents'::regclass"""
    with dd.conn.transaction(force_rollback=True):
        verdict = dd.is_duplicate(incoming["body"], incoming["title"])
        locked = dd.conn.execute(locked_days).fetchone()[0]
    assert verdict.verdict == "new"
    assert locked <= int(dd.settings["window_days"]) + 2


def _week_partition(table, day):
    """The week partition of the lookup table ``table`` that holds ``day``."""
    return f"{table}_w{_monday(day):%Y%m%d}"


def _clauses_week(day):
    """The week partition of document_clauses that holds ``day``."""
    return _week_partition("document_clauses", day)


def _pages(conn, table):
    """``table``'s size in pages."""
    return conn.execute("SELECT pg_relation_size(%s::regclass) / 8192", (table,)).fetchone()[0]


def _brin_index(conn, table):
    """The BRIN ``doc_id`` index of ``table``."""
    (name,) = conn.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
        " WHERE a.amname = 'brin' AND i.indrelid = %s::regclass",
        (table,),
    ).fetchone()
    return name


def _left_to_summarize(conn, index):
    """How many of ``index``'s block ranges were not summarized (it summarizes them)."""
    return conn.execute("SELECT brin_summarize_new_values(%s::regclass)", (index,)).fetchone()[0]


def test_a_stored_batch_leaves_its_lookup_ranges_summarized(dd, sina):
    # A BRIN scan reads every page of a range not summarized: ingest
    # summarizes the ranges a batch filled, the last one (still filling)
    # included, in each week its items fall in. The clause rows of 400 texts
    # fill four ranges of 8 pages, all in one batch (the first range is
    # summarized from the start: the index was built on an empty partition).
    dd.set_setting("seen_at_past_days", 0)  # three weeks back: a backfill
    weeks_ago = NOW - timedelta(days=21)
    docs = [
        {"id": a["id"], "title": a["title"], "body": a["body"], "seen_at": seen}
        for k, a in enumerate(sina[:800])
        for seen in [NOW if k % 2 else weeks_ago]
    ]
    list(dd.ingest_many(docs, batch_size=len(docs)))
    dd.conn.commit()
    for day in (NOW.date(), weeks_ago.date()):
        table = _clauses_week(day)
        assert _pages(dd.conn, table) > 24
        assert _left_to_summarize(dd.conn, _brin_index(dd.conn, table)) == 0


def test_batches_of_one_text_leave_no_range_behind(dd, sina):
    # Each batch walks back from the range of the last page to the first one
    # already summarized: a text at a time, ranges are crossed one by one and
    # the last one keeps its summary as it fills. The clause rows of ~100 texts
    # fill a range of 8 pages; 300 texts fill three.
    for a in sina[:300]:
        dd.ingest({"id": a["id"], "title": a["title"], "body": a["body"]})
        dd.conn.commit()
    assert _pages(dd.conn, _clauses_week(NOW.date())) > 16
    for table in WEEKLY:
        index = _brin_index(dd.conn, _week_partition(table, NOW.date()))
        assert _left_to_summarize(dd.conn, index) == 0, index


def test_a_lookup_partition_held_by_a_vacuum_does_not_stall_ingest(dd, dsn, sina):
    ensure(dd.conn, 0)
    dd.conn.commit()
    table = _clauses_week(NOW.date())
    with psycopg.connect(dsn) as holder:
        # what VACUUM takes, and summarizing needs
        holder.execute(f"LOCK TABLE {table} IN SHARE UPDATE EXCLUSIVE MODE")
        # waiting for the lock would cancel the batch
        dd.conn.execute("SET statement_timeout = '3s'")
        docs = [{"id": a["id"], "title": a["title"], "body": a["body"]} for a in sina[:200]]
        assert [v.verdict for v in dd.ingest_many(docs)].count("new") >= 150
        dd.conn.commit()
        holder.rollback()
    # left to the vacuum: the ranges filled meanwhile are still to summarize
    assert _left_to_summarize(dd.conn, _brin_index(dd.conn, table)) > 0


def test_a_role_that_does_not_own_the_partitions_leaves_them_to_autovacuum(dd, dsn, sina):
    docs = [{"id": a["id"], "title": a["title"], "body": a["body"]} for a in sina[:200]]
    list(dd.ingest_many(docs))
    index = _brin_index(dd.conn, _clauses_week(NOW.date()))
    dd.conn.execute("SELECT brin_desummarize_range(%s::regclass, 0)", (index,))
    dd.conn.commit()
    role = f"dedup_reader_{dd.conn.info.backend_pid}"
    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute(f"CREATE ROLE {role}")
        try:
            other.execute(f"SET ROLE {role}")
            # only the owner may summarize: skipped, not an error
            summarize = "SELECT dedup_summarize_lookups(ARRAY[now()])"
            assert other.execute(summarize).fetchone()[0] == 0
        finally:
            other.execute("RESET ROLE")
            other.execute(f"DROP ROLE {role}")
    assert _left_to_summarize(dd.conn, index) == 1


def test_compact_packs_the_btrees_of_ended_weeks_once(dd, dsn, sina):
    """``partitions compact``: the btree indexes of the lookup tables' week
    that has ended are rebuilt packed (fillfactor 100) and smaller, once; the
    week in progress and the other index kinds (MinHash GIN, BRIN) are left as
    they are; checks give the same verdicts through the packed indexes."""
    from click.testing import CliRunner

    from dedup_pg.cli import main

    dd.set_setting("seen_at_past_days", 0)
    ended = NOW - timedelta(days=14)  # a week whose Sunday is 8 or more days back
    old = [article_item(a, ended + timedelta(seconds=i)) for i, a in enumerate(sina[:400])]
    recent = [article_item(a, NOW) for a in sina[400:410]]
    list(dd.ingest_many(old + recent))
    # copies of stored texts of both weeks, a sentence cut: found by the lookups
    # (each checked as seen in its own week: the old one is outside today's window)
    edits = [first_sentence_cut(d, "edit") for d in old[::40] + recent[::3]]

    def verdicts():
        return [(v.verdict, v.layer, v.matched_id) for v in dd.check_many(edits)]

    before = verdicts()
    assert sum(v == "duplicate" for v, _, _ in before) >= 10

    def indexes():
        return {
            r[0]: (r[1], r[2])
            for r in dd.conn.execute(
                "SELECT i.relname, i.reloptions, pg_relation_size(i.oid) FROM pg_inherits h"
                " JOIN pg_index x ON x.indrelid = h.inhrelid JOIN pg_class i ON i.oid = x.indexrelid"
                " WHERE h.inhparent = ANY (ARRAY['document_clauses', 'document_minhash_bands',"
                " 'document_simhash_bands']::regclass[])"
            )
        }

    monday = _monday(ended.date()).strftime("%Y%m%d")
    at_first = indexes()
    planned = compact_closed_weeks(dd.conn, dry_run=True)
    assert indexes() == at_first  # a dry run changes nothing
    assert {(c.table, c.partition) for c in planned} == {
        ("document_clauses", f"document_clauses_w{monday}"),
        ("document_simhash_bands", f"document_simhash_bands_w{monday}"),
    }
    assert all(c.bytes_after is None for c in planned)

    result = CliRunner().invoke(
        main, ["partitions", "compact", "--dsn", dsn], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "2 indexes packed" in result.output, result.output
    after = indexes()
    for c in planned:
        options, size = after[c.index]
        assert options == ["fillfactor=100"]
        assert size < at_first[c.index][1], (c.index, at_first[c.index][1], size)
    # everything else as it was: the GIN and BRIN indexes, the week in progress
    assert {k: v for k, v in after.items() if k not in {c.index for c in planned}} == {
        k: v for k, v in at_first.items() if k not in {c.index for c in planned}
    }
    assert compact_closed_weeks(dd.conn) == []  # once
    again = compact_closed_weeks(dd.conn, force=True)  # unless forced
    assert {c.index for c in again} == {c.index for c in planned}
    assert all(c.bytes_after == after[c.index][1] for c in again)
    result = CliRunner().invoke(
        main, ["partitions", "compact", "--dsn", dsn], catch_exceptions=False
    )
    assert "nothing to compact" in result.output
    assert verdicts() == before


def test_a_compaction_stopped_midway_leaves_no_index_behind(dd, dsn, sina):
    """A REINDEX CONCURRENTLY that is cancelled (a maintenance job stopped)
    leaves its new index behind, invalid but written by every insert:
    ``compact`` drops it, leaves the index unmarked, and the next run packs it."""
    dd.set_setting("seen_at_past_days", 0)
    ended = NOW - timedelta(days=14)
    docs = [article_item(a, ended + timedelta(seconds=i)) for i, a in enumerate(sina[:100])]
    list(dd.ingest_many(docs))
    pid = dd.conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    invalid = (
        "SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid"
        " WHERE NOT x.indisvalid"
    )
    seen_invalid: list = []
    # an open snapshot elsewhere: the rebuild, its new index built, waits for it
    with psycopg.connect(dsn) as holder:
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM documents")

        def cancel_when_waiting():
            with psycopg.connect(dsn, autocommit=True) as c:
                for _ in range(300):
                    waiting = c.execute(
                        "SELECT wait_event = 'virtualxid' FROM pg_stat_activity WHERE pid = %s",
                        [pid],
                    ).fetchone()[0]
                    if waiting:
                        break
                    threading.Event().wait(0.1)
                seen_invalid.extend(r[0] for r in c.execute(invalid))
                c.execute("SELECT pg_cancel_backend(%s)", [pid])

        canceller = threading.Thread(target=cancel_when_waiting)
        canceller.start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            compact_closed_weeks(dd.conn)
        canceller.join(timeout=60)
        holder.rollback()
    assert any("ccnew" in name for name in seen_invalid), seen_invalid
    assert dd.conn.execute(invalid).fetchall() == []
    assert (
        dd.conn.execute(
            "SELECT count(*) FROM pg_class WHERE 'fillfactor=100' = ANY (reloptions)"
        ).fetchone()[0]
        == 0
    )
    assert len(compact_closed_weeks(dd.conn)) == 2


def test_compact_while_ingest_writes_into_the_week_it_packs(dd, dsn, sina):
    """``compact`` is safe while ingest runs: another connection keeps storing
    late texts into the ended week being packed, none fails, and copies of them
    are found through the packed indexes afterwards (80% or more as duplicates
    of their own text: sina2018 holds reposts, and the copy of one may match
    the earlier text of its story)."""
    dd.set_setting("seen_at_past_days", 0)
    ended = NOW - timedelta(days=14)
    stored_first = [article_item(a, ended + timedelta(seconds=i)) for i, a in enumerate(sina[:300])]
    list(dd.ingest_many(stored_first))
    late = [
        article_item(a, ended + timedelta(hours=1, seconds=i)) for i, a in enumerate(sina[300:360])
    ]
    errors: list[Exception] = []
    stored: list[str] = []
    writing = threading.Event()

    def keep_ingesting():
        try:
            with Deduper(dsn, migrate=False) as writer:
                for k in range(0, len(late), 2):  # small batches: many transactions
                    stored.extend(v.verdict for v in writer.ingest_many(late[k : k + 2]))
                    writing.set()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
            writing.set()

    writer = threading.Thread(target=keep_ingesting)
    writer.start()
    writing.wait(timeout=60)
    stored_before = len(stored)
    done = compact_closed_weeks(dd.conn)
    stored_during = len(stored) - stored_before
    writer.join(timeout=120)
    assert not errors and len(stored) == len(late), (errors, stored)
    assert stored_before < len(late) and stored_during > 0, (stored_before, stored_during)
    assert len(done) == 2 and all(c.bytes_after for c in done)
    assert (
        dd.conn.execute(
            "SELECT count(*) FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid"
            " WHERE NOT x.indisvalid OR NOT x.indisready"
        ).fetchone()[0]
        == 0
    )
    # the late texts again, a sentence cut: found through the packed indexes
    verdicts = dd.check_many([first_sentence_cut(d, "again") for d in late])
    found = [
        v
        for v, d in zip(verdicts, late, strict=True)
        if v.verdict == "duplicate" and v.matched_id == d["id"]
    ]
    assert len(found) >= 0.8 * len(late), [(v.verdict, v.layer) for v in verdicts]
