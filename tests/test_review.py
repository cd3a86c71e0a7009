"""Review decisions: every status transition, double calls, undo, restore of
exact and near duplicates, whitelisting, provenance and numbers."""

from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from dedup_pg.metrics import prometheus_text

T0 = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=2)


def _doc(sina, i, **extra):
    a = sina[i]
    return {
        "id": a["id"],
        "title": a["title"],
        "body": a["body"],
        "source": "sina",
        "seen_at": T0,
        **extra,
    }


def _call(dd, verb, cid, note=None):
    return dd.conn.execute(
        f"SELECT candidate_id, status, doc_id, decided_by, note FROM {verb}_candidate(%s, %s, 'tester')",
        [cid, note],
    ).fetchone()


def _count(dd, sql, *args):
    return dd.conn.execute(sql, args).fetchone()[0]


def _near_copy(dd, sina, i):
    original = dd.ingest(_doc(sina, i))
    body = sina[i]["body"] + "\n欢迎关注示例网官方账号,获取更多一手资讯和深度解读内容。"
    copy = dd.ingest(
        {
            "id": f"copy-{i}",
            "title": sina[i]["title"],
            "body": body,
            "source": "copier",
            "seen_at": T0 + timedelta(minutes=5),
        }
    )
    assert copy.verdict == "duplicate" and copy.layer in ("simhash", "containment")
    return original, copy


def test_restore_a_near_duplicate_then_reingest(dd, sina):
    original, copy = _near_copy(dd, sina, 0)
    row = _call(dd, "restore", copy.candidate_id, "different page")
    assert (
        row[1:][0] == "restored" and row[2] is not None and row[3:] == ("tester", "different page")
    )
    restored_doc = row[2]
    stored = dd.conn.execute(
        "SELECT external_id, body, clause_count > 0 FROM documents WHERE doc_id = %s",
        [restored_doc],
    ).fetchone()
    assert stored[0] == "copy-0" and stored[1].endswith("深度解读内容。") and stored[2]
    # the link is kept, and the pair is whitelisted
    assert (
        _count(
            dd,
            "SELECT matched_doc_id FROM duplicate_candidates WHERE candidate_id = %s",
            copy.candidate_id,
        )
        == original.doc_id
    )
    assert (
        _count(
            dd,
            "SELECT count(*) FROM dedup_whitelist WHERE kind = 'pair' AND candidate_id = %s",
            copy.candidate_id,
        )
        == 1
    )
    # its sighting now belongs to the restored document
    assert dd.conn.execute(
        "SELECT doc_id, verdict FROM document_sightings WHERE candidate_id = %s",
        [copy.candidate_id],
    ).fetchone() == (restored_doc, "restored")
    # re-ingested, the restored text is not judged a duplicate of the original again
    again = dd.ingest(
        {
            "id": "copy-0-again",
            "title": sina[0]["title"],
            "body": sina[0]["body"] + "\n欢迎关注示例网官方账号,获取更多一手资讯和深度解读内容。",
            "seen_at": T0 + timedelta(hours=1),
        }
    )
    assert again.matched_doc_id != original.doc_id
    assert (again.verdict, again.layer, again.matched_doc_id) == (
        "duplicate",
        "exact",
        restored_doc,
    )


def test_restore_an_exact_duplicate(dd, sina):
    original = dd.ingest(_doc(sina, 1))
    copy = dd.ingest(_doc(sina, 1, id="exact-copy", url="https://copy.example/1"))
    assert (copy.verdict, copy.layer) == ("duplicate", "exact")
    # a byte-identical body is not stored twice; the candidate still restores it
    assert _count(
        dd,
        "SELECT body IS NULL FROM duplicate_candidates WHERE candidate_id = %s",
        copy.candidate_id,
    )
    row = _call(dd, "restore", copy.candidate_id)
    assert row[1] == "restored"
    assert dd.conn.execute(
        "SELECT external_id, body FROM documents WHERE doc_id = %s", [row[2]]
    ).fetchone() == ("exact-copy", sina[1]["body"])
    assert _count(dd, "SELECT count(*) FROM dedup_whitelist WHERE kind = 'text'") == 1
    # the text is whitelisted: the next copy of it is kept too
    assert dd.ingest(_doc(sina, 1, id="third-copy")).verdict == "new"
    assert original.doc_id != row[2]


def test_exact_copy_with_other_formatting_keeps_its_own_body(dd, sina):
    dd.ingest(_doc(sina, 2))
    reformatted = "\u3000\u3000" + sina[2]["body"].replace("。", "。\r\n", 2)
    copy = dd.ingest(_doc(sina, 2, id="fmt", body=reformatted))
    assert copy.layer == "exact"
    assert (
        dd.conn.execute(
            "SELECT body FROM duplicate_candidates WHERE candidate_id = %s", [copy.candidate_id]
        ).fetchone()[0]
        == reformatted
    )


def test_restore_a_semantic_layer_candidate(dd, sina):
    """The semantic layer (a later revision) queues rows like any other layer; the
    review functions do not depend on the layer."""
    original, copy = _near_copy(dd, sina, 3)
    dd.conn.execute(
        "UPDATE duplicate_candidates SET layer = 'semantic', score = 0.95 WHERE candidate_id = %s",
        [copy.candidate_id],
    )
    row = _call(dd, "restore", copy.candidate_id)
    assert row[1] == "restored" and row[2] is not None


def _pending_review(dd, sina):
    """A text kept for review: three quarters of an article's clauses and a
    stretch of another (containment duplicates only at 0.99). (verdict, text)"""
    dd.set_setting("containment_threshold", 0.99)
    dd.set_setting("simhash_distance", 0)
    dd.ingest(_doc(sina, 10))
    clauses = sina[10]["body"].split("，")
    partial = "，".join(clauses[: len(clauses) * 3 // 4]) + "，" + sina[500]["body"][:300]
    review = dd.ingest({"id": "partial", "title": sina[10]["title"], "body": partial})
    assert review.verdict == "review" and review.doc_id
    return review, partial


def test_pending_review_dismiss_and_confirm(dd, sina):
    review, _ = _pending_review(dd, sina)
    # restore does not apply to a pending review: it is already kept
    with pytest.raises(psycopg.errors.RaiseException, match="is pending review"):
        _call(dd, "restore", review.candidate_id)
    assert _call(dd, "dismiss", review.candidate_id, "not a copy")[1:3] == (
        "dismissed",
        review.doc_id,
    )
    assert _call(dd, "dismiss", review.candidate_id, "not a copy")[1:3] == (
        "dismissed",
        review.doc_id,
    )
    assert (
        _count(
            dd, "SELECT count(*) FROM dedup_whitelist WHERE candidate_id = %s", review.candidate_id
        )
        == 1
    )
    # a reviewer changes their mind: it is a duplicate after all
    row = _call(dd, "confirm", review.candidate_id, "same story")
    assert row[1:3] == ("confirmed", None)
    assert _count(dd, "SELECT count(*) FROM documents WHERE doc_id = %s", review.doc_id) == 0
    assert _count(dd, "SELECT count(*) FROM document_clauses WHERE doc_id = %s", review.doc_id) == 0
    assert _count(dd, "SELECT count(*) FROM document_digests WHERE doc_id = %s", review.doc_id) == 0
    assert (
        _count(
            dd, "SELECT count(*) FROM dedup_whitelist WHERE candidate_id = %s", review.candidate_id
        )
        == 0
    )
    assert _call(dd, "confirm", review.candidate_id)[1] == "confirmed"  # twice: no change
    # and can still be restored from there
    row = _call(dd, "restore", review.candidate_id)
    assert (
        row[1] == "restored"
        and _count(dd, "SELECT count(*) FROM documents WHERE doc_id = %s", row[2]) == 1
    )


@pytest.mark.parametrize("verb", ["confirm", "reopen as auto"])
def test_a_reviews_exact_copies_keep_their_text_when_its_document_goes(dd, sina, verb):
    """Exact copies of a text kept for review are recorded against its document,
    their text by reference. Confirming the review (or reopening it as an
    automatic duplicate, the review page's undo) removes that document: before
    revision 0038 the copies were left without a text and could not be restored."""
    review, partial = _pending_review(dd, sina)
    copy = dd.ingest(
        {"id": "copy", "title": sina[10]["title"], "body": partial, "source": "copier"}
    )
    assert (copy.verdict, copy.layer, copy.matched_doc_id) == ("duplicate", "exact", review.doc_id)
    body = "SELECT body FROM duplicate_candidates WHERE candidate_id = %s"
    assert _count(dd, body, copy.candidate_id) is None  # the review document's text

    if verb == "confirm":
        assert _call(dd, "confirm", review.candidate_id)[1:3] == ("confirmed", None)
    else:
        dd.conn.execute("SELECT reopen_candidate(%s, 'auto')", [review.candidate_id])
    assert _count(dd, "SELECT count(*) FROM documents WHERE doc_id = %s", review.doc_id) == 0
    assert _count(dd, body, copy.candidate_id) == partial
    row = _call(dd, "restore", copy.candidate_id, "wanted after all")
    assert row[1] == "restored"
    assert _count(dd, "SELECT body FROM documents WHERE doc_id = %s", row[2]) == partial


def test_confirm_an_automatic_duplicate_and_wrong_verbs(dd, sina):
    _, copy = _near_copy(dd, sina, 4)
    assert _call(dd, "confirm", copy.candidate_id, "agreed")[1] == "confirmed"
    with pytest.raises(psycopg.errors.RaiseException, match="not queued for review"):
        _call(dd, "dismiss", copy.candidate_id)
    with pytest.raises(
        psycopg.errors.NoDataFound, match="duplicate candidate 999999 does not exist"
    ):
        _call(dd, "restore", 999999)


def test_restore_undo_is_exact(dd, sina):
    """restore then confirm leaves the tables as they were."""
    _, copy = _near_copy(dd, sina, 5)
    tables = ("documents", "document_clauses", "document_digests", "dedup_whitelist")
    before = [_count(dd, f"SELECT count(*) FROM {t}") for t in tables]
    _call(dd, "restore", copy.candidate_id)
    assert [_count(dd, f"SELECT count(*) FROM {t}") for t in tables] != before
    _call(dd, "confirm", copy.candidate_id)
    assert [_count(dd, f"SELECT count(*) FROM {t}") for t in tables] == before
    assert (
        dd.conn.execute(
            "SELECT verdict FROM document_sightings WHERE candidate_id = %s", [copy.candidate_id]
        ).fetchone()[0]
        == "duplicate"
    )


def test_clusters_and_daily_stats(dd, sina):
    for n in range(3):
        dd.ingest(
            _doc(sina, 6, id=f"site-{n}", source=f"s{n}.example", seen_at=T0 + timedelta(minutes=n))
        )
    dd.ingest({"id": "bad", "body": "", "source": "s9.example"})
    cluster = dd.conn.execute(
        "SELECT sightings, sources, first_source, duplicates, exact FROM document_clusters "
        "WHERE title = %s",
        [sina[6]["title"]],
    ).fetchone()
    assert cluster == (3, 3, "s0.example", 2, 2)
    totals = dd.conn.execute(
        "SELECT sum(ingested), sum(new), sum(exact), sum(errors) FROM dedup_daily_stats"
    ).fetchone()
    assert totals == (4, 1, 2, 1)


def test_prometheus_text(dd, sina):
    dd.ingest(_doc(sina, 7))
    dd.ingest(_doc(sina, 7, id="again"))
    text = prometheus_text(dd.conn)
    assert 'dedup_pg_verdicts_total{layer="exact",source="sina",verdict="duplicate"} 1.0' in text
    assert 'dedup_pg_verdicts_total{layer="",source="sina",verdict="new"} 1.0' in text
    assert "dedup_pg_documents 1.0" in text
    assert "# TYPE dedup_pg_review_pending gauge" in text


def test_review_queue_and_a_candidate_are_read_through_indexes(dd, sina):
    """The pending queue in order and a candidate by its id are read through
    indexes (the queue index and the primary key, since revision 0063 the only
    ones on those columns), not by scanning the candidates."""
    review, _ = _pending_review(dd, sina)
    dd.conn.execute("SET enable_seqscan = off")
    try:
        plans = {
            sql: "\n".join(r[0] for r in dd.conn.execute(f"EXPLAIN {sql}", args))
            for sql, args in (
                ("SELECT * FROM review_queue", []),
                (
                    "SELECT status FROM duplicate_candidates WHERE candidate_id = %s",
                    [review.candidate_id],
                ),
            )
        }
    finally:
        dd.conn.execute("RESET enable_seqscan")
    queue, by_id = plans.values()
    # a partition's index is named for its columns (status, created_at, candidate_id)
    assert "_status_created_at_" in queue and "Seq Scan" not in queue, queue
    assert "pkey" in by_id and "Seq Scan" not in by_id, by_id
    assert [r[0] for r in dd.conn.execute("SELECT id FROM review_queue")] == [review.candidate_id]
