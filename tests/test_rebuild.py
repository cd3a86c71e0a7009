"""dedup-pg rebuild: batch de-duplication over everything stored, and
re-fingerprinting in place, on real Sina articles with generated copies."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from click.testing import CliRunner

from dedup_pg import Deduper
from dedup_pg import rebuild as rb
from dedup_pg.cli import main
from dedup_pg.fingerprint import fingerprint
from dedup_pg.simhash import to_signed

from conftest import fresh_database

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


def corpus(sina: list[dict], n: int = 200, shift_days: int = 1) -> list[dict]:
    """``n`` articles a minute apart, then copies ``shift_days`` later: 40
    reposts with a banner and a new headline, 30 exact copies, 20 truncated
    recrawls (the first 70%). Every copy names its original (``of``)."""
    docs = []
    for i, a in enumerate(sina[:n]):
        seen = T0 + timedelta(minutes=i)
        docs.append({"id": a["id"], "title": a["title"], "body": a["body"], "seen_at": seen})
    for i, a in enumerate(sina[:90]):
        seen = T0 + timedelta(days=shift_days, minutes=i)
        if i < 40:
            copy = {"title": a["title"] + "(转载)", "body": "来源:示例网\n" + a["body"]}
        elif i < 70:
            copy = {"title": a["title"], "body": a["body"]}
        else:
            copy = {"title": a["title"], "body": a["body"][: int(len(a["body"]) * 0.7)]}
        docs.append({"id": f"{a['id']}-copy", "of": a["id"], "seen_at": seen, **copy})
    return [d | {"seen_at": d["seen_at"].isoformat(), "source": "s"} for d in docs]


def kept_ids(conn: psycopg.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT external_id FROM documents").fetchall()}


def candidates(conn: psycopg.Connection) -> dict[str, tuple]:
    """external_id -> (layer, status, matched external_id)."""
    rows = conn.execute(
        "SELECT c.external_id, c.layer, c.status, d.external_id FROM duplicate_candidates c"
        " LEFT JOIN documents d ON d.doc_id = c.matched_doc_id"
    ).fetchall()
    return {r[0]: r[1:] for r in rows}


def state(conn: psycopg.Connection) -> tuple:
    """Everything a rebuild may write, for comparing before and after."""
    return tuple(
        conn.execute(sql).fetchall()
        for sql in (
            "SELECT doc_id, content_sha1, simhash FROM documents ORDER BY doc_id",
            "SELECT candidate_id, doc_id, matched_doc_id, layer, status FROM duplicate_candidates"
            " ORDER BY candidate_id",
            "SELECT sighting_id, doc_id, verdict, candidate_id FROM document_sightings ORDER BY 1",
            "SELECT content_sha1, doc_id FROM document_digests ORDER BY 1",
        )
    )


def test_rebuild_of_a_bulk_loaded_corpus_agrees_with_streaming_ingest(
    dd, template_dsn, sina, tmp_path
):
    docs = corpus(sina)
    streamed = list(dd.ingest_many(docs))  # in seen_at order, as they arrived
    assert sum(v.verdict == "duplicate" for v in streamed) >= 85

    src = tmp_path / "corpus.jsonl"
    src.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs), encoding="utf-8")
    with fresh_database(template_dsn) as other:
        runner = CliRunner()
        dry = runner.invoke(main, ["rebuild", "--dsn", other, "--dry-run"])
        assert dry.exit_code == 0 and "0 documents read" in dry.output
        result = runner.invoke(
            main, ["rebuild", "--dsn", other, "--input", str(src), "--format", "json"]
        )
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["loaded"] == len(docs) and report["documents"] == len(docs)
        with psycopg.connect(other) as conn:
            # the same documents kept, the same decisions, matched to the same originals
            assert kept_ids(conn) == kept_ids(dd.conn)
            assert candidates(conn) == candidates(dd.conn)
            by_copy = candidates(conn)
            found = [d for d in docs if by_copy.get(d["id"], ())[1:] == ("auto", d.get("of"))]
            assert len(found) >= 85
            assert by_copy[docs[240]["id"]][0] == "exact"  # an exact copy
            # the same sightings per verdict and layer
            sql = "SELECT verdict, layer, count(*) FROM document_sightings GROUP BY 1, 2 ORDER BY 1, 2"
            assert conn.execute(sql).fetchall() == dd.conn.execute(sql).fetchall()
            assert sum(report["duplicates"].values()) == sum(
                v.verdict == "duplicate" for v in streamed
            )


def test_rebuild_keeps_the_earliest_writes_restorable_candidates_and_is_idempotent(dd, sina):
    docs = corpus(sina, n=150, shift_days=-3)  # the copies arrived three days *before*
    originals = {v.id for v in dd.ingest_many(docs[:150]) if v.verdict != "duplicate"}
    # ingest that looked back one day only: every copy was kept
    late = dd.ingest_batch(docs[150:], {"window_days": 1})
    assert {v.verdict for v in late} <= {"new", "review"}
    copies = {d["id"]: d["of"] for d in docs if "of" in d and d["of"] in originals}
    assert len(copies) >= 85

    dry = rb.rebuild(dd.conn, options=dd.options, dry_run=True)
    assert kept_ids(dd.conn) >= set(copies) | set(copies.values())  # a dry run writes nothing
    report = rb.rebuild(dd.conn, options=dd.options)
    assert sum(report.duplicates.values()) >= sum(dry.duplicates.values()) >= 85
    kept, cands = kept_ids(dd.conn), candidates(dd.conn)
    # the copy came first: it is kept, and the original is its duplicate (two
    # short truncated copies share too little for any layer, as in streaming)
    caught = [c for c, o in copies.items() if cands.get(o, ())[1:] == ("auto", c)]
    assert len(caught) >= len(copies) - 2 and set(caught) <= kept
    # every duplicate is recorded against an earlier document that is kept
    late_or_gone = dd.conn.execute(
        "SELECT count(*) FROM duplicate_candidates c WHERE c.status = 'auto' AND NOT EXISTS"
        " (SELECT 1 FROM documents d WHERE d.doc_id = c.matched_doc_id AND d.seen_at <= c.seen_at)"
    ).fetchone()[0]
    assert late_or_gone == 0
    # the demoted original's sighting points at the kept copy
    original = copies[caught[0]]
    row = dd.conn.execute(
        "SELECT c.candidate_id, c.matched_doc_id, s.doc_id, s.verdict FROM duplicate_candidates c"
        " JOIN document_sightings s ON s.candidate_id = c.candidate_id WHERE c.external_id = %s",
        [original],
    ).fetchone()
    assert row[1] == row[2] and row[3] == "duplicate"

    # a second rebuild changes nothing
    before = state(dd.conn)
    again = rb.rebuild(dd.conn, options=dd.options)
    assert again.duplicates == {} and again.reviews == {} and state(dd.conn) == before

    # restorable: the original is a document again, and a rebuild leaves it so
    status, doc_id = dd.conn.execute(
        "SELECT status, doc_id FROM restore_candidate(%s)", [row[0]]
    ).fetchone()
    assert status == "restored" and doc_id is not None
    rb.rebuild(dd.conn, options=dd.options)
    assert original in kept_ids(dd.conn)


def _expected(dd: Deduper) -> dict[int, tuple]:
    rows = dd.conn.execute("SELECT doc_id, title, body FROM documents").fetchall()
    out = {}
    for doc_id, title, body in rows:
        fp = fingerprint(body, title, dd.options)
        out[doc_id] = (fp.digest, to_signed(fp.simhash), sorted(fp.clauses))
    return out


def _stored(dd: Deduper) -> dict[int, tuple]:
    clauses = dict(
        dd.conn.execute(
            "SELECT doc_id, array_agg(clause_hash ORDER BY clause_hash) FROM document_clauses"
            " GROUP BY doc_id"
        ).fetchall()
    )
    rows = dd.conn.execute("SELECT doc_id, content_sha1, simhash FROM documents").fetchall()
    return {d: (bytes(sha1), sim, clauses.get(d, [])) for d, sha1, sim in rows}


class Interrupted(Exception):
    pass


def test_refingerprint_is_resumable_and_turns_new_collisions_into_exact_duplicates(dd, sina):
    docs = corpus(sina, n=250)[:250]
    # a site that stamps a marker into its copies: distinct texts today
    marked = [
        {**d, "id": d["id"] + "-m", "body": d["body"].replace("。", "。【示例网】", 1),
         "seen_at": (T0 + timedelta(days=3, minutes=i)).isoformat()}
        for i, d in enumerate(docs[:20])
    ]  # fmt: skip
    list(dd.ingest_many(docs))
    dd.ingest_batch(marked, {"window_days": 1})  # looking back one day: all kept
    assert all(d["id"] in kept_ids(dd.conn) for d in marked)

    # the marker becomes noise: every text loses it, and so does every "的"
    dd.set_setting("noise_patterns", [*dd.options.noise_patterns, "【示例网】", "的"])
    assert _stored(dd) != _expected(dd)
    n = len(kept_ids(dd.conn))
    calls = []

    def stop_after_one_batch(done: int, total: int, changed: int) -> None:
        calls.append((done, total, changed))
        raise Interrupted

    with pytest.raises(Interrupted):
        rb.refingerprint(dd.conn, options=dd.options, batch_size=100, progress=stop_after_one_batch)
    assert calls == [(100, n, calls[0][2])] and calls[0][2] > 50
    result = rb.refingerprint(dd.conn, options=dd.options, batch_size=100)
    assert result.resumed and result.done == n and result.total == n - 100
    assert _stored(dd) == _expected(dd)  # the same end state as one uninterrupted run
    # every stored text has its digest, held by a document that exists
    orphans = dd.conn.execute(
        "SELECT count(*) FROM documents d WHERE NOT EXISTS (SELECT 1 FROM document_digests g"
        " JOIN documents h ON h.doc_id = g.doc_id WHERE g.content_sha1 = d.content_sha1)"
    ).fetchone()[0]
    assert orphans == 0
    # nothing to do now, until forced
    assert rb.refingerprint(dd.conn, options=dd.options).done == 0

    report = rb.rebuild(dd.conn, options=dd.options)
    assert report.duplicates.get("exact") == len(marked)
    cands = candidates(dd.conn)
    for m, d in zip(marked, docs, strict=False):
        assert cands[m["id"]] == ("exact", "auto", d["id"])
