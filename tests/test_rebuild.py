"""dedup-pg rebuild: batch de-duplication over everything stored, and
re-fingerprinting in place, on real Sina articles with generated copies."""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from click.testing import CliRunner
from test_minhash import HASHES_OFF, synonyms

from dedup_pg import Deduper, minhash
from dedup_pg import rebuild as rb
from dedup_pg.cli import main
from dedup_pg.deduper import prepare_batch
from dedup_pg.facts import fact_keys
from dedup_pg.fingerprint import fingerprint
from dedup_pg.simhash import to_signed

from conftest import allow_backfill, clause_array, clause_rows, dxy_tuning_pair, fresh_database

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _backfill(dsn):
    allow_backfill(dsn)  # the corpus is replayed at fixed 2024 dates


@contextmanager
def backfilled(template_dsn):
    """Another fresh database, taking the 2024 dates too."""
    with fresh_database(template_dsn) as other:
        allow_backfill(other)
        yield other


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
    with backfilled(template_dsn) as other:
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
    # the lookup rows' temporary views are gone with the rebuild: left in the
    # session, they would block a change to the tables they read
    left = dd.conn.execute(
        "SELECT to_regclass('pg_temp.dedup_rb_rows'), to_regclass('pg_temp.dedup_rb_mh')"
    ).fetchone()
    assert left == (None, None)
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
        out[doc_id] = (
            fp.digest,
            to_signed(fp.simhash),
            clause_array(fp.clauses),
            clause_rows(fp.clauses, fp.lead),
        )
    return out


def _stored(dd: Deduper) -> dict[int, tuple]:
    clauses = dict(
        dd.conn.execute(
            "SELECT doc_id, array_agg(clause_hash ORDER BY clause_hash) FROM document_clauses"
            " GROUP BY doc_id"
        ).fetchall()
    )
    rows = dd.conn.execute(
        "SELECT doc_id, content_sha1, simhash, clauses FROM documents"
    ).fetchall()
    return {d: (bytes(sha1), sim, c, clauses.get(d, [])) for d, sha1, sim, c in rows}


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
    # each original now shares its text with its marked copy: the digest goes to
    # the later document, as ingest leaves it
    holders = dict(
        dd.conn.execute(
            "SELECT d.external_id, h.external_id FROM documents d"
            " JOIN document_digests g ON g.content_sha1 = d.content_sha1"
            " JOIN documents h ON h.doc_id = g.doc_id AND h.seen_at = g.seen_at"
            " WHERE d.external_id = ANY (%s)",
            [[d["id"] for d in docs[:20]]],
        ).fetchall()
    )
    assert holders == {d["id"]: m["id"] for d, m in zip(docs[:20], marked, strict=True)}
    # nothing to do now, until forced
    assert rb.refingerprint(dd.conn, options=dd.options).done == 0

    report = rb.rebuild(dd.conn, options=dd.options)
    assert report.duplicates.get("exact") == len(marked)
    cands = candidates(dd.conn)
    for m, d in zip(marked, docs, strict=False):
        assert cands[m["id"]] == ("exact", "auto", d["id"])


def test_refingerprint_fills_minhash_and_facts_and_a_rebuild_finds_a_minhash_duplicate(dd, sina):
    originals = [a for a in sina[400:460] if len(a["body"]) > 600][:10]
    docs = [
        {"id": a["id"], "title": a["title"], "body": a["body"],
         "seen_at": (T0 + timedelta(minutes=i)).isoformat()}
        for i, a in enumerate(originals)
    ]  # fmt: skip
    list(dd.ingest_many(docs))
    a = originals[3]
    rewrite = {
        "id": "syn",
        "title": synonyms(a["title"]),
        "body": synonyms(a["body"]),
        "seen_at": (T0 + timedelta(days=1)).isoformat(),
    }
    # only the MinHash layer could see it, and it is off: kept
    assert dd.ingest_batch([rewrite], HASHES_OFF | {"minhash_threshold": None})[0].verdict == "new"

    # documents stored before revision 0008: no signature, facts or bands
    dd.conn.execute("UPDATE documents SET facts = NULL")
    dd.conn.execute("DELETE FROM document_minhash_bands")
    assert rb.rebuild(dd.conn, options=dd.options, dry_run=True, overrides=HASHES_OFF).pairs == 0

    result = rb.refingerprint(dd.conn, options=dd.options)
    assert result.done == result.changed == len(docs) + 1
    rows = dd.conn.execute(
        "SELECT d.doc_id, d.title, d.body, dedup_minhash_values(m.signature), d.facts,"
        " dedup_minhash_bands(m.signature)"
        " FROM documents d LEFT JOIN document_minhash_bands m USING (doc_id, seen_at)"
    ).fetchall()
    assert len(rows) == len(docs) + 1
    for _, title, body, sig, facts, bands in rows:
        fp = fingerprint(body, title, dd.options)
        assert fp.minhash is not None and sig == list(fp.minhash)
        assert facts == fact_keys(fp.facts) and facts
        assert bands == minhash.band_keys(list(fp.minhash))
    # written as ingest writes them: nothing changes now, even when forced
    assert rb.refingerprint(dd.conn, options=dd.options, force=True).changed == 0

    report = rb.rebuild(dd.conn, options=dd.options, overrides=HASHES_OFF)
    assert report.duplicates == {"minhash": 1} and report.reviews == {}
    assert candidates(dd.conn)["syn"] == ("minhash", "auto", a["id"])
    score, thresholds = dd.conn.execute(
        "SELECT score, thresholds FROM duplicate_candidates WHERE external_id = 'syn'"
    ).fetchone()
    assert 0.5 <= score < 1.0
    assert thresholds["minhash_threshold"] == 0.5 and thresholds["facts_disagreement_share"] == 0.15
    assert "facts_disagree" not in thresholds and "lead_n" not in thresholds


def test_rebuild_sends_a_template_pair_to_review_as_streaming_does(dd, template_dsn, sina_all):
    """The conservatory's two brochures (tests/test_minhash.py): near
    duplicates whose facts differ on both sides."""
    by_id = {a["id"]: a for a in sina_all}
    docs = [
        {"id": a["id"], "title": a["title"], "body": a["body"],
         "seen_at": (T0 + timedelta(minutes=i)).isoformat()}
        for i, a in enumerate([by_id["sina18-ab758ed17a64"], by_id["sina18-78113133d36c"]])
    ]  # fmt: skip
    with backfilled(template_dsn) as other, Deduper(other) as streaming:
        verdicts = list(streaming.ingest_many(docs))
        assert verdicts[1].verdict == "review"
        streamed = candidates(streaming.conn)

    rb.load_rows(
        dd.conn,
        prepare_batch(docs, options=dd.options, max_chars=dd.max_chars, window=dd.window).rows,
    )
    unchecked = rb.rebuild(
        dd.conn, options=dd.options, dry_run=True, overrides={"facts_disagreement_share": None}
    )
    assert sum(unchecked.duplicates.values()) == 1  # what the fact check prevents
    report = rb.rebuild(dd.conn, options=dd.options)
    assert report.duplicates == {} and sum(report.reviews.values()) == 1
    assert (
        candidates(dd.conn)
        == streamed
        == {docs[1]["id"]: (verdicts[1].layer, "pending", docs[0]["id"])}
    )


def test_rebuild_finds_a_short_item_whole_inside_its_copy_as_streaming_does(dd, template_dsn, dxy):
    """Whole-text containment (revision 0031): a People's Daily item of one
    clause of its own, reposted under a hashtag line (the tuning set's
    dxy_covid_short line 1474), is a containment duplicate in the rebuild too."""
    pair = dxy_tuning_pair(dxy, 1474)[1:]
    docs = [
        {"id": f"x{i}", "title": a["title"], "body": a["body"],
         "seen_at": (T0 + timedelta(minutes=i)).isoformat()}
        for i, a in enumerate(pair)
    ]  # fmt: skip
    with backfilled(template_dsn) as other, Deduper(other) as streaming:
        verdicts = list(streaming.ingest_many(docs))
        assert (verdicts[1].verdict, verdicts[1].layer) == ("duplicate", "containment")
        streamed = candidates(streaming.conn)

    rb.load_rows(
        dd.conn,
        prepare_batch(docs, options=dd.options, max_chars=dd.max_chars, window=dd.window).rows,
    )
    off = rb.rebuild(
        dd.conn, options=dd.options, dry_run=True, overrides={"containment_whole_text_chars": None}
    )
    assert off.duplicates == {}  # no other layer finds it
    report = rb.rebuild(dd.conn, options=dd.options)
    assert report.duplicates == {"containment": 1}
    assert candidates(dd.conn) == streamed == {"x1": ("containment", "auto", "x0")}


def _link(
    doc_id: int, matched: int, verdict: str, layer: str, score: float, **t: object
) -> rb.Link:
    day = T0 + timedelta(minutes=doc_id)
    return rb.Link(doc_id, day, matched, T0 + timedelta(minutes=matched), verdict, layer, score,
                   None, dict(t))  # fmt: skip


def test_a_failed_fact_check_stops_the_hash_layers_as_in_streaming():
    """Streaming checks the facts of the first hash layer's match and looks no
    further: a later layer's duplicate does not count, the semantic layer's does."""
    conflict = _link(3, 1, "review", "containment", 0.95, facts_disagree=True)
    minhash_dup = _link(3, 2, "duplicate", "minhash", 0.9)
    plain_review = _link(3, 2, "review", "simhash", 0.97)
    clusters, joined = rb.assign([conflict, minhash_dup, plain_review])
    assert clusters == [] and joined == {}
    # its review is the match that failed, ahead of any other review
    reviews = rb._reviews([conflict, minhash_dup, plain_review], set(), {}, set())
    assert [(r["matched_doc_id"], r["layer"]) for r in reviews] == [(1, "containment")]
    assert "facts_disagree" not in reviews[0]["thresholds"]
    # a duplicate of an earlier hash layer wins over it
    simhash_dup = _link(3, 2, "duplicate", "simhash", 0.9)
    _, joined = rb.assign([conflict, minhash_dup, simhash_dup])
    assert joined[3] == simhash_dup
    # the semantic layer runs on what the hash layers kept
    semantic_dup = _link(3, 2, "duplicate", "semantic", 0.97)
    _, joined = rb.assign([conflict, minhash_dup, semantic_dup])
    assert joined[3] == semantic_dup
    # a failed fact check against a document that is itself a duplicate does not count
    _, joined = rb.assign([_link(1, 0, "duplicate", "exact", 1.0), conflict, minhash_dup])
    assert joined[3] == minhash_dup


def disagree(dd, a, b, share, added) -> bool:
    """SQL's dedup_facts_disagree (the rule ingest and rebuild apply)."""
    return dd.conn.execute(
        "SELECT dedup_facts_disagree(%s, %s, %s, %s)", [fact_keys(a), fact_keys(b), share, added]
    ).fetchone()[0]


def test_rebuild_applies_the_added_facts_rule_and_its_recrawl_exception(dd, template_dsn, sina):
    """A text that opens with its own paragraphs and then quotes a stored
    article whole adds many facts: another story (review), also when a few of
    its opening clauses are the article's already. One that opens with the
    stored article and goes on (a full recrawl of a page stored truncated) is a
    duplicate. Streaming and a rebuild of the same texts agree."""
    arts = [a for a in sina[600:1000] if 600 < len(a["body"]) < 1500]
    fps = {a["id"]: fingerprint(a["body"], a["title"], dd.options) for a in arts}
    pairs = []
    for old, new in zip(arts, arts[1:], strict=False):
        f_old, f_new = set(fps[old["id"]].facts), set(fps[new["id"]].facts)
        n_old, n_new = len(fps[old["id"]].clauses), len(fps[new["id"]].clauses)
        if len(f_new - f_old) >= max(15, 0.4 * len(f_old | f_new)) and 12 <= n_new <= 1.5 * n_old:
            pairs.append((old, new))
    (a, b), (c, d) = pairs[0], pairs[2]  # disjoint pairs
    # a stored text quoted after a short opening: 1 to 4 of the 10 lead clauses its own
    used = {x["id"] for x in (a, b, c, d)}
    early = None
    for e, f in zip(arts, arts[1:], strict=False):
        if early or used & {e["id"], f["id"]}:
            continue
        for pos in [i for i, ch in enumerate(f["body"]) if ch == "。"][:6]:
            body = f"{f['body'][: pos + 1]}\n{e['body']}"
            fp = fingerprint(body, f["title"], dd.options)
            shared = len(set(fp.lead) & set(fps[e["id"]].clauses))
            if 0 < 2 * shared < len(fp.lead) and disagree(
                dd, fp.facts, fps[e["id"]].facts, 0.15, 0.3
            ):
                early = (e, {"title": f["title"], "body": body})
                break
    assert early is not None
    at = [(T0 + timedelta(minutes=i)).isoformat() for i in range(6)]
    docs = [
        {"id": "quoted", "title": a["title"], "body": a["body"], "seen_at": at[0]},
        {"id": "truncated", "title": c["title"], "body": c["body"], "seen_at": at[1]},
        {"id": "speech", "title": early[0]["title"], "body": early[0]["body"], "seen_at": at[2]},
        {"id": "commentary", "title": b["title"], "body": f"{b['body']}\n{a['body']}",
         "seen_at": at[3]},
        {"id": "recrawl", "title": c["title"], "body": f"{c['body']}\n{d['body']}",
         "seen_at": at[4]},
        {"id": "quoting", **early[1], "seen_at": at[5]},
    ]  # fmt: skip
    with backfilled(template_dsn) as other, Deduper(other) as streaming:
        verdicts = {v.id: (v.verdict, v.matched_id) for v in streaming.ingest_many(docs)}
        streamed = candidates(streaming.conn)
    assert verdicts["commentary"] == ("review", "quoted")
    assert verdicts["recrawl"] == ("duplicate", "truncated")
    assert verdicts["quoting"] == ("review", "speech")

    rb.load_rows(
        dd.conn,
        prepare_batch(docs, options=dd.options, max_chars=dd.max_chars, window=dd.window).rows,
    )
    rb.rebuild(dd.conn, options=dd.options)
    assert candidates(dd.conn) == streamed
    assert {k: v[1] for k, v in streamed.items()} == {
        "commentary": "pending",
        "recrawl": "auto",
        "quoting": "pending",
    }
