"""The ingest path end to end: every layer, verdict and record, on real text."""

import json
import os
import random
import tempfile
from collections import Counter
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from psycopg.types.json import Jsonb

from dedup_pg import Deduper, Document, minhash, simhash
from dedup_pg.deduper import prepare_batch
from dedup_pg.fingerprint import ARRAY_FIELDS, with_json_arrays
from dedup_pg.normalize import NORMALIZATION_VERSION

T0 = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)


def _article(sina, i):
    a = sina[i]
    return {"id": a["id"], "title": a["title"], "body": a["body"], "source": "sina", "seen_at": T0}


def _count(dd, sql, *params):
    return dd.conn.execute(sql, params).fetchone()[0]


def _plan_of(dd, select, values):
    """EXPLAIN VERBOSE of ``select`` over ``unnest(values) v``, as one string."""
    sql = f"EXPLAIN VERBOSE SELECT {select} FROM unnest(%s::bigint[]) v"
    return "\n".join(r[0] for r in dd.conn.execute(sql, [values]))


def _log_plans(dd, analyze=False):
    """Every statement's plan, nested ones included (auto_explain, as notices),
    appended to the list returned, from now on in this session."""
    plans = []
    dd.conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
    dd.conn.execute("LOAD 'auto_explain'")
    for setting in (
        "auto_explain.log_min_duration = 0",
        f"auto_explain.log_analyze = {'on' if analyze else 'off'}",
        "auto_explain.log_nested_statements = on",
        "auto_explain.log_level = notice",
        "client_min_messages = notice",
    ):
        dd.conn.execute(f"SET {setting}")
    return plans


def test_new_then_exact_duplicate_is_a_sighting_not_a_document(dd, sina):
    first = dd.ingest(_article(sina, 0))
    assert first.verdict == "new" and first.doc_id is not None and first.layer is None
    copy = {
        **_article(sina, 0),
        "id": "repost-1",
        "url": "https://other.example/1",
        "source": "other",
    }
    again = dd.ingest(copy)
    assert (again.verdict, again.layer, again.matched_id, again.matched_doc_id, again.score) == (
        "duplicate",
        "exact",
        sina[0]["id"],
        first.doc_id,
        1.0,
    )
    assert again.doc_id is None
    assert _count(dd, "SELECT count(*) FROM documents") == 1
    sightings = dd.conn.execute(
        "SELECT external_id, source, verdict, layer FROM document_sightings WHERE doc_id = %s ORDER BY sighting_id",
        [first.doc_id],
    ).fetchall()
    assert sightings == [
        (sina[0]["id"], "sina", "new", None),
        ("repost-1", "other", "duplicate", "exact"),
    ]


def test_a_batchs_sightings_keep_the_items_order(dd, sina):
    """dedup_ingest inserts a batch's sightings in one statement after its
    loop (revision 0055): their ids keep the items' order, so among texts seen
    at one time the original's sighting comes before its copies', and each
    sighting is its item's verdict (document, layer, score, candidate)."""
    a, b, c = _article(sina, 3), _article(sina, 4), _article(sina, 5)
    shortened = b["body"][: int(len(b["body"]) * 0.9)]
    batch = [
        a,
        {**a, "id": "copy-a", "source": "other"},
        b,
        {**b, "id": "near-b", "body": shortened},
        c,
        {**a, "id": "copy-a2", "source": "third"},
    ]
    verdicts = list(dd.ingest_many(batch))
    assert [v.verdict for v in verdicts] == [
        "new",
        "duplicate",
        "new",
        "duplicate",
        "new",
        "duplicate",
    ]
    rows = dd.conn.execute(
        "SELECT external_id, verdict, layer, score, candidate_id, doc_id"
        " FROM document_sightings ORDER BY sighting_id"
    ).fetchall()
    assert [r[0] for r in rows] == [item["id"] for item in batch]
    assert rows == [
        (v.id, v.verdict, v.layer, v.score, v.candidate_id, v.doc_id or v.matched_doc_id)
        for v in verdicts
    ]


def test_normalization_only_copy_is_an_exact_duplicate(dd, sina):
    original = _article(sina, 1)
    dd.ingest(original)
    body = original["body"]
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in body)
    variant = {
        "id": "fmt",
        "title": original["title"],
        "body": "\u3000\u3000" + fullwidth.replace("。", "。\r\n\r\n", 3) + "&nbsp;<br>",
    }
    v = dd.ingest(variant)
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "exact", original["id"])


def test_near_duplicate_is_kept_in_full_as_a_candidate(dd, sina):
    original = _article(sina, 2)
    kept = dd.ingest(original)
    banner = "\n本文版权归原作者所有,转载请联系作者获得授权。\n更多精彩资讯请关注示例新闻网"
    copy = {
        "id": "banner-copy",
        "title": original["title"],
        "body": original["body"] + banner,
        "url": "https://copy.example/2",
        "seen_at": T0 + timedelta(hours=3),
    }
    v = dd.ingest(copy)
    assert v.verdict == "duplicate" and v.layer in ("simhash", "containment", "exact")
    assert v.matched_doc_id == kept.doc_id and v.matched_id == original["id"]
    if v.layer != "exact":
        row = dd.conn.execute(
            "SELECT body, status, layer, matched_doc_id, thresholds ? 'simhash_distance' "
            "FROM duplicate_candidates WHERE candidate_id = %s",
            [v.candidate_id],
        ).fetchone()
        assert row == (copy["body"], "auto", v.layer, kept.doc_id, True)
    assert _count(dd, "SELECT count(*) FROM documents") == 1


def test_each_layer_on_constructed_copies(dd, sina):
    originals = [_article(sina, i) for i in range(3, 9)]
    list(dd.ingest_many(originals))
    body = originals[0]["body"]
    sentences = [s + "。" for s in body.split("。") if s]
    shuffled = {
        "id": "shuffled",
        "body": "".join(reversed(sentences)),
        "title": originals[0]["title"],
    }
    v = dd.ingest(shuffled)
    assert v.verdict == "duplicate" and v.layer == "simhash" and v.matched_id == originals[0]["id"]
    assert v.distance is not None and v.distance <= 3 and v.score == 1 - v.distance / 64
    # a long extra passage moves the SimHash, but the copy still holds every clause
    longer = {
        "id": "longer",
        "title": originals[1]["title"],
        "body": originals[1]["body"] + sina[400]["body"][:600],
    }
    v = dd.ingest(longer)
    assert v.verdict == "duplicate" and v.matched_id == originals[1]["id"]
    assert v.layer in ("simhash", "containment")


def test_review_verdict_keeps_the_document_and_queues_it(dd, sina):
    dd.set_setting("containment_threshold", 0.99)
    dd.set_setting("simhash_distance", 0)
    original = _article(sina, 10)
    dd.ingest(original)
    clauses = original["body"].split("，")
    half = "，".join(clauses[: len(clauses) * 3 // 4]) + "，" + sina[500]["body"][:300]
    v = dd.ingest({"id": "partial", "body": half, "title": original["title"]})
    assert v.verdict == "review" and v.doc_id is not None and v.matched_id == original["id"]
    status, doc_id = dd.conn.execute(
        "SELECT status, doc_id FROM duplicate_candidates WHERE candidate_id = %s", [v.candidate_id]
    ).fetchone()
    assert (status, doc_id) == ("pending", v.doc_id)
    assert _count(dd, "SELECT count(*) FROM documents WHERE external_id = 'partial'") == 1


def test_later_items_in_a_batch_are_checked_against_earlier_ones(dd, sina):
    a = _article(sina, 20)
    verdicts = list(dd.ingest_many([a, {**a, "id": "same-batch-copy"}, _article(sina, 21)]))
    assert [v.verdict for v in verdicts] == ["new", "duplicate", "new"]
    assert verdicts[1].matched_id == a["id"]


def test_look_back_window(dd, sina):
    dd.set_setting("seen_at_past_days", 0)  # a backfill of two months
    a = {**_article(sina, 30), "seen_at": T0 - timedelta(days=60)}
    dd.ingest(a)
    late = {**a, "id": "a-month-later", "seen_at": T0 - timedelta(days=30)}
    assert dd.ingest(late).verdict == "new"  # outside the 7-day window
    dd.set_setting("window_days", 0)  # 0 = all history
    again = {**a, "id": "two-months-later", "seen_at": T0}
    assert dd.ingest(again).verdict == "duplicate"


def test_day_partitions_are_created_on_demand(dd, sina):
    dd.set_setting("seen_at_past_days", 0)  # a backfill
    day = datetime(2026, 3, 14, 23, 30, tzinfo=timezone.utc)
    dd.ingest({**_article(sina, 40), "seen_at": day})
    for name in (
        "documents_p20260314",
        "document_sightings_p20260314",
        "duplicate_candidates_p20260314",
        "document_clauses_w20260309",  # lookup tables: the ISO week (Monday 9 March)
        "document_minhash_bands_w20260309",
    ):
        assert _count(dd, "SELECT count(*) FROM pg_class WHERE relname = %s", name) == 1
    assert _count(dd, "SELECT count(*) FROM documents_p20260314") == 1
    assert _count(dd, "SELECT count(*) FROM document_clauses_w20260309") > 0


def test_document_fields_and_fingerprints_are_stored(dd, sina):
    a = _article(sina, 50)
    doc = Document(
        body=a["body"],
        id="d50",
        title=a["title"],
        url="https://n.example/50",
        source="sina",
        seen_at=T0,
        published_at=T0 - timedelta(hours=5),
    )
    v = dd.ingest(doc)
    row = dd.conn.execute(
        "SELECT external_id, title, body, url, source, published_at, length(content_sha1), length(title_sha1), "
        "norm_version, clause_count > 0, simhash <> 0 FROM documents WHERE doc_id = %s",
        [v.doc_id],
    ).fetchone()
    assert row == (
        "d50",
        a["title"],
        a["body"],
        "https://n.example/50",
        "sina",
        T0 - timedelta(hours=5),
        20,
        20,
        NORMALIZATION_VERSION,
        True,
        True,
    )


def test_simhash_bands_are_the_band_keys_at_radius_0_and_inlined(dd):
    """dedup_simhash_bands (the store's and the probe's keys) gives what
    dedup_simhash_band_keys gives at radius 0, for SimHashes across the signed
    64-bit range, and PostgreSQL inlines it: a plan shows its expression, not
    a call."""
    rng = random.Random(53)
    values = [0, -1, 1, 2**63 - 1, -(2**63), 65535, -65536]
    values += [rng.randrange(-(2**63), 2**63) for _ in range(500)]
    unequal = dd.conn.execute(
        "SELECT v FROM unnest(%s::bigint[]) v"
        " WHERE dedup_simhash_bands(v) IS DISTINCT FROM dedup_simhash_band_keys(v, 0)",
        [values],
    ).fetchall()
    assert unequal == []
    plan = _plan_of(dd, "dedup_simhash_bands(v)", values[:3])
    assert "dedup_simhash_bands" not in plan and "65535" in plan, plan


def test_simhash_tail_is_the_next_two_bands_and_inlined(dd):
    """dedup_simhash_tail (a band row's tail) gives what dedup_pg.simhash.tail
    gives, across the signed 64-bit range, and is inlined where it is called."""
    rng = random.Random(67)
    values = [0, -1, 1, 2**63 - 1, -(2**63), 65535, -65536, 2**31, -(2**31), 2**47]
    values += [rng.randrange(-(2**63), 2**63) for _ in range(500)]
    got = dd.conn.execute(
        "SELECT array_agg(dedup_simhash_tail(v, b) ORDER BY o, b)"
        " FROM unnest(%s::bigint[]) WITH ORDINALITY u(v, o), generate_series(0, 3) b",
        [values],
    ).fetchone()[0]
    assert got == [simhash.tail(v % 2**64, b) for v in values for b in range(4)]
    for v in values[:50]:  # a tail holds the two bands after its own
        u = v % 2**64
        for b in range(4):
            bands = simhash.bands(u)
            assert simhash.tail(u, b) % 2**32 == bands[(b + 1) % 4] | bands[(b + 2) % 4] << 16
    plan = _plan_of(dd, "dedup_simhash_tail(v, 2)", values[:3])
    assert "dedup_simhash_tail" not in plan and "65535" in plan, plan


def test_the_simhash_probe_reads_rows_only_for_entries_within_distance(dd, sina):
    """The SimHash probe finds a text's candidates by an index-only scan of
    document_simhash_bands: band key and tail (48 bits) within distance, from
    the index alone; it reads band rows (for the whole simhash) only when some
    entry is within that distance. An edited copy is found by the SimHash
    layer; an unrelated text reads no band row."""
    originals = [_article(sina, 200 + k) for k in range(30)]
    list(dd.ingest_many(originals))
    dd.conn.execute("VACUUM (ANALYZE) document_simhash_bands")
    edits = [
        {**a, "id": "edit-" + a["id"], "body": a["body"].replace("的", "之", 1)}
        for a in originals[:10]
    ]
    unrelated = [{**_article(sina, 400 + k), "id": f"other-{k}"} for k in range(10)]
    plans = _log_plans(dd, analyze=True)

    def probe(items):
        plans.clear()
        verdicts = dd.check_many(items)
        entries = [p for p in plans if "v_sh_keys" in p and "tail" in p]
        rows = [p for p in plans if "v_sh_near_tails" in p]
        return verdicts, entries, rows

    verdicts, entries, rows = probe(edits)
    assert [(v.layer, v.matched_id) for v in verdicts] == [
        ("simhash", a["id"]) for a in originals[:10]
    ]
    assert len(entries) == 10 and all("Index Only Scan" in p for p in entries), entries[:1]
    # the rows were vacuumed: the index alone answers
    assert all("Heap Fetches: 0" in p for p in entries), entries[:1]
    assert len(rows) == 10
    verdicts, entries, rows = probe(unrelated)
    dd.conn.execute("RESET client_min_messages")
    assert {v.verdict for v in verdicts} == {"new"}
    assert len(entries) == 10 and rows == []


def test_the_clause_layers_reads_are_inlined_into_dedup_ingest(dd, sina):
    """dedup_clause_holders and dedup_containment_candidates, the two reads
    that have a Citus form of their own, are plain SQL on one node: PostgreSQL
    inlines them into the statement that calls them (a plan scans the tables,
    not the functions), and they give the holders and rows of stored texts."""
    list(dd.ingest_many([{**_article(sina, 70 + k), "id": f"h{k}"} for k in range(3)]))
    doc_id, seen_at, clauses, rows = dd.conn.execute(
        "SELECT d.doc_id, d.seen_at, dedup_document_clauses(d.doc_id, d.seen_at, d.clauses),"
        " ARRAY(SELECT c.clause_hash FROM document_clauses c WHERE c.doc_id = d.doc_id)"
        " FROM documents d ORDER BY d.doc_id LIMIT 1"
    ).fetchone()
    window = ["-infinity", "infinity"]
    holders = dd.conn.execute(
        "SELECT x.clause_hash, x.doc_id FROM dedup_clause_holders(%s, %s, %s, 5) x",
        [[*rows[:3], 42], *window],
    ).fetchall()
    assert sorted(holders, key=str) == sorted(
        [(h, doc_id) for h in rows[:3]] + [(42, None)], key=str
    )
    rows = dd.conn.execute(
        "SELECT k.doc_id, k.clause_count, k.shared"
        " FROM dedup_containment_candidates(%s, %s, %s, %s, %s, %s) k",
        [[doc_id], [seen_at], [3], clauses, *window],
    ).fetchall()
    assert rows == [(doc_id, len(clauses), 3 if len(clauses) < 16 else len(clauses))]
    for call in (
        "dedup_clause_holders('{1,2}', now() - interval '1 day', now(), 5)",
        "dedup_containment_candidates('{1}', ARRAY[now()], '{1}', '{1}', now(), now())",
    ):
        plan = "\n".join(r[0] for r in dd.conn.execute(f"EXPLAIN SELECT * FROM {call}"))
        assert "Function Scan on dedup_" not in plan and "Scan" in plan, plan


def test_lookup_rows_are_the_fingerprints_keys(dd, sina):
    """What ingest writes to the lookup tables is what the SQL key functions
    make of the stored fingerprints, and
    the MinHash band keys are the signature's values, three a band, as
    dedup_pg.minhash.band_keys lays them out: the GIN index is over
    dedup_minhash_bands(signature), and a probe by those keys uses it."""
    list(dd.ingest_many([{**_article(sina, 60 + k), "id": f"k{k}"} for k in range(12)]))
    rows = dd.conn.execute(
        "SELECT d.doc_id,"
        " ARRAY(SELECT b.band_key FROM document_simhash_bands b"
        "        WHERE b.doc_id = d.doc_id AND b.seen_at = d.seen_at ORDER BY 1)"
        "   = dedup_simhash_band_keys(d.simhash)"
        " AND ARRAY(SELECT b.tail FROM document_simhash_bands b"
        "        WHERE b.doc_id = d.doc_id AND b.seen_at = d.seen_at ORDER BY b.band_key)"
        "   = ARRAY(SELECT dedup_simhash_tail(d.simhash, b) FROM generate_series(0, 3) b),"
        " (SELECT count(*) FROM document_clauses c"
        "   WHERE c.doc_id = d.doc_id AND c.seen_at = d.seen_at) BETWEEN 1 AND d.clause_count,"
        " dedup_minhash_values(m.signature), dedup_minhash_bands(m.signature)"
        " FROM documents d JOIN document_minhash_bands m USING (doc_id, seen_at)"
    ).fetchall()
    assert len(rows) == 12
    assert all(r[1:3] == (True, True) for r in rows), rows
    for _, _, _, values, keys in rows:
        assert len(values) == minhash.NUM_PERM
        assert keys == minhash.band_keys(values) and len(set(keys)) == minhash.BANDS
    # each text is found by its own keys, through the index
    dd.conn.execute("SET enable_seqscan = off")
    for doc_id, _, _, _, keys in rows:
        found = dd.conn.execute(
            "SELECT array_agg(b.doc_id) FROM document_minhash_bands b"
            " WHERE dedup_minhash_bands(b.signature) && %s::bigint[]",
            [keys[5:6]],
        ).fetchone()[0]
        assert doc_id in found
    plan = "\n".join(
        r[0]
        for r in dd.conn.execute(
            "EXPLAIN SELECT b.doc_id FROM document_minhash_bands b"
            " WHERE dedup_minhash_bands(b.signature) && %s::bigint[]",
            [rows[0][4]],
        )
    )
    dd.conn.execute("RESET enable_seqscan")
    assert "Bitmap Index Scan on document_minhash_bands_" in plan, plan


def test_same_title_over_a_different_body_is_new(dd, sina):
    a, b = _article(sina, 60), _article(sina, 61)
    dd.ingest(a)
    assert dd.ingest({**b, "title": a["title"]}).verdict == "new"


def test_is_duplicate_is_read_only(dd, sina):
    a = _article(sina, 70)
    assert dd.is_duplicate(a["body"], title=a["title"]).verdict == "new"
    stored = dd.ingest(a)
    before = [
        _count(dd, f"SELECT count(*) FROM {t}")
        for t in ("documents", "document_sightings", "duplicate_candidates")
    ]
    v = dd.is_duplicate(a["body"], title=a["title"])
    assert (v.verdict, v.layer, v.matched_doc_id) == ("duplicate", "exact", stored.doc_id)
    assert dd.is_duplicate(sina[71]["body"]).verdict == "new"
    after = [
        _count(dd, f"SELECT count(*) FROM {t}")
        for t in ("documents", "document_sightings", "duplicate_candidates")
    ]
    assert before == after


def _messages_sent(dd, call):
    """The protocol messages the client sent to the server during ``call()``
    (libpq's trace of the connection), by type."""
    with tempfile.TemporaryFile("w+") as trace:
        dd.conn.pgconn.trace(trace.fileno())
        try:
            call()
        finally:
            dd.conn.pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t") for line in trace.read().splitlines()]
    return Counter(fields[3].split()[0] for fields in sent if len(fields) > 3 and fields[1] == "F")


def test_a_check_is_one_round_trip(dd, sina):
    """is_duplicate is the crawler's per-page question: one statement, no
    BEGIN / COMMIT around it (each is a round trip: ~0.5 ms of a single
    check's ~1.7 ms of SQL wall time, BENCHMARKS.md). An ingest still runs in
    a transaction."""
    a = _article(sina, 72)
    dd.is_duplicate(a["body"])  # the ingest statement prepared, settings read
    sent = _messages_sent(dd, lambda: dd.is_duplicate(a["body"], title=a["title"]))
    assert sent["Sync"] == 1 and sent["Query"] == 0, sent
    sent = _messages_sent(dd, lambda: dd.ingest(a))
    assert sent["Query"] == 2, sent  # BEGIN and COMMIT


def test_whitelisted_text_is_never_a_duplicate(dd, sina):
    a = _article(sina, 80)
    first = dd.ingest(a)
    digest = dd.conn.execute(
        "SELECT content_sha1 FROM documents WHERE doc_id = %s", [first.doc_id]
    ).fetchone()[0]
    dd.conn.execute(
        "INSERT INTO dedup_whitelist (kind, content_sha1, note) VALUES ('text', %s, 'test')",
        [digest],
    )
    v = dd.ingest({**a, "id": "whitelisted-copy"})
    assert v.verdict == "new" and v.doc_id != first.doc_id


def test_whitelisted_pair_is_not_a_near_duplicate(dd, sina):
    a = _article(sina, 90)
    first = dd.ingest(a)
    copy = {
        "id": "pair-copy",
        "title": a["title"],
        "body": a["body"] + "\n(本文来自示例网,转载请注明出处,谢谢合作)",
    }
    v = dd.is_duplicate(copy["body"], title=copy["title"])
    assert v.verdict == "duplicate" and v.layer != "exact"
    from dedup_pg.fingerprint import fingerprint

    d1 = dd.conn.execute(
        "SELECT content_sha1 FROM documents WHERE doc_id = %s", [first.doc_id]
    ).fetchone()[0]
    d2 = fingerprint(copy["body"], copy["title"], dd.options).digest
    lo, hi = sorted([bytes(d1), d2])
    dd.conn.execute(
        "INSERT INTO dedup_whitelist (kind, content_sha1, other_sha1) VALUES ('pair', %s, %s)",
        [lo, hi],
    )
    assert dd.ingest(copy).verdict == "new"


def test_simhash_distance_depends_on_length(dd):
    settings = dd.conn.execute(
        "SELECT jsonb_object_agg(name, value) FROM dedup_settings"
    ).fetchone()[0]
    got = {
        n: dd.conn.execute(
            "SELECT duplicate_distance, review_distance FROM dedup_simhash_distances(%s, %s)",
            [n, Jsonb(settings)],
        ).fetchone()
        for n in (40, 200, 400, 2000)
    }
    # the review band: 3 bits over the duplicate distance, capped at 3 (one exact
    # probe a band; revision 0008)
    assert got == {40: (0, 3), 200: (1, 3), 400: (2, 3), 2000: (3, 3)}
    wide = settings | {"simhash_review_distance": 6}
    assert dd.conn.execute(
        "SELECT review_distance FROM dedup_simhash_distances(2000, %s)", [Jsonb(wide)]
    ).fetchone() == (6,)


#: The SimHash distance rule as dedup_simhash_distances held it before revision
#: 0048 (a scalar subquery for the step): the reference the steps must agree with
_DISTANCES_BEFORE_0048 = """
    WITH rule AS (
        SELECT least(coalesce((SELECT (r ->> 1)::integer
                                 FROM jsonb_array_elements(%(s)s::jsonb -> 'simhash_distance_by_length') r
                                WHERE (r ->> 0)::integer <= %(n)s
                                ORDER BY (r ->> 0)::integer DESC LIMIT 1),
                              0),
                     (%(s)s::jsonb ->> 'simhash_distance')::integer) AS dup)
    SELECT dup, greatest(dup, least(7, (%(s)s::jsonb ->> 'simhash_review_distance')::integer,
                                    dup + coalesce((%(s)s::jsonb ->> 'simhash_review_margin')::integer, 3)))
      FROM rule
"""


def test_simhash_distances_read_the_steps_as_the_rule_before(dd):
    # dedup_simhash_distances reads dedup_simhash_distance_steps (revision
    # 0048): the same distances as the rule before, for any length, under
    # settings with unsorted steps, a step without a distance, no steps, a cap
    # below the steps and a wide review band
    settings = dd.conn.execute(
        "SELECT jsonb_object_agg(name, value) FROM dedup_settings"
    ).fetchone()[0]
    variants = [
        settings,
        settings | {"simhash_distance_by_length": [[300, 2], [0, 1], [1000, 5], [80, None]]},
        settings | {"simhash_distance_by_length": []},
        {k: v for k, v in settings.items() if k != "simhash_distance_by_length"},
        settings | {"simhash_distance": 2, "simhash_review_distance": 6},
        settings | {"simhash_review_margin": None, "simhash_review_distance": 7},
    ]
    for s in variants:
        steps = dd.conn.execute(
            "SELECT count(*) FROM dedup_simhash_distance_steps(%s)", [Jsonb(s)]
        ).fetchone()[0]
        assert steps == 1 + len(s.get("simhash_distance_by_length") or [])
        for n in (0, 1, 79, 80, 81, 149, 150, 299, 300, 599, 600, 999, 1000, 5000):
            got = dd.conn.execute(
                "SELECT duplicate_distance, review_distance FROM dedup_simhash_distances(%s, %s)",
                [n, Jsonb(s)],
            ).fetchone()
            assert (
                got == dd.conn.execute(_DISTANCES_BEFORE_0048, {"s": Jsonb(s), "n": n}).fetchone()
            )


def test_ingest_takes_each_text_s_distances_from_its_source_s_steps(dd, sina):
    # dedup_ingest reads the steps once a source and picks each text's step by
    # its length: the thresholds recorded with each exact copy are the
    # distances dedup_simhash_distances gives for that length and source. One
    # source has a step at each text's exact length (a text takes the step it
    # reaches), the distances alternating; the other has the defaults
    from dedup_pg.fingerprint import fingerprint

    texts = []
    for i, cut in enumerate((60, 130, 350, 450, 900, 3000)):
        a = _article(sina, 300 + 200 * i)
        texts.append({"title": a["title"], "body": a["body"][:cut]})
    lengths = [fingerprint(t["body"], t["title"], dd.options).length for t in texts]
    steps = [[0, 3]] + [[n, 1 + k % 3] for k, n in enumerate(sorted(lengths))]
    dd.conn.execute(
        "INSERT INTO dedup_sources (source, settings) VALUES ('steep.example', %s)",
        [Jsonb({"simhash_distance_by_length": steps})],
    )
    assert {v.verdict for v in dd.ingest_many(texts)} == {"new"}
    copies = [
        {**t, "id": f"copy-{k}-{source}", "source": source}
        for k, t in enumerate(texts)
        for source in ("steep.example", None)
    ]
    verdicts = list(dd.ingest_many(copies))  # one batch, the sources alternating
    assert {(v.verdict, v.layer) for v in verdicts} == {("duplicate", "exact")}
    got, expected = [], []
    for copy, v in zip(copies, verdicts, strict=True):
        thresholds = dd.conn.execute(
            "SELECT thresholds FROM duplicate_candidates WHERE candidate_id = %s",
            [v.candidate_id],
        ).fetchone()[0]
        got.append((thresholds["simhash_distance"], thresholds["simhash_review_distance"]))
        expected.append(
            dd.conn.execute(
                "SELECT duplicate_distance, review_distance FROM dedup_simhash_distances("
                "%s, dedup_effective_settings(%s, '{}'))",
                [lengths[len(expected) // 2], copy["source"]],
            ).fetchone()
        )
    assert got == expected
    # the two sources' distances differ for most texts: each copy was given its own
    assert sum(a != b for a, b in zip(got[::2], got[1::2], strict=True)) >= 3


def test_provenance_how_many_sites_and_who_first(dd, sina):
    a = _article(sina, 100)
    docs = [
        {**a, "id": f"site-{i}", "source": f"site{i}.example", "seen_at": T0 + timedelta(minutes=i)}
        for i in range(5)
    ]
    verdicts = list(dd.ingest_many(docs))
    original = verdicts[0].doc_id
    sites, first = dd.conn.execute(
        "SELECT count(DISTINCT source), (array_agg(source ORDER BY seen_at))[1] "
        "FROM document_sightings WHERE doc_id = %s",
        [original],
    ).fetchone()
    assert (sites, first) == (5, "site0.example")


def test_daily_stats_view(dd, sina):
    list(
        dd.ingest_many(
            [_article(sina, 110), {**_article(sina, 110), "id": "c"}, _article(sina, 111)]
        )
    )
    row = dd.conn.execute(
        "SELECT ingested, new, exact FROM dedup_daily_stats WHERE source = 'sina'"
    ).fetchone()
    assert row == (3, 2, 1)


def test_real_corpus_batch_mostly_new(dd, sina):
    verdicts = list(dd.ingest_many([_article(sina, i) for i in range(200, 700)]))
    counts = {
        k: sum(v.verdict == k for v in verdicts) for k in ("new", "duplicate", "review", "error")
    }
    assert counts["error"] == 0 and counts["new"] >= 480
    assert _count(dd, "SELECT count(*) FROM documents") == counts["new"] + counts["review"]


def test_deduper_uses_the_dsn_environment_variable(dsn, monkeypatch):
    monkeypatch.setenv("DEDUP_PG_DSN", dsn)
    with Deduper() as dd:
        assert dd.dsn == dsn


def test_thresholds_per_call(dd, sina):
    dd.ingest(_article(sina, 120))
    copy = {
        "id": "banner",
        "title": sina[120]["title"],
        "body": sina[120]["body"] + "\n本文来自示例网,转载请保留出处链接,谢谢您的支持与合作。",
    }
    assert dd.check_many([copy])[0].verdict == "duplicate"
    strict = {
        "simhash_distance": 0,
        "simhash_review_distance": 0,
        "containment_threshold": 1.01,
        "containment_review_threshold": 1.01,
        "minhash_threshold": 1.01,
        "minhash_review_threshold": 1.01,
    }
    assert dd.check_many([copy], strict)[0].verdict == "new"
    v = dd.ingest_batch([copy], strict)[0]
    assert v.verdict == "new"
    with pytest.raises(ValueError, match="cannot be overridden per call: lowercase, nope"):
        dd.ingest_batch([copy], {"lowercase": True, "nope": 1})


def test_thresholds_are_recorded_with_each_decision(dsn, sina):
    with Deduper(dsn, thresholds={"containment_threshold": 0.75}) as strictish:
        strictish.ingest(_article(sina, 130))
        v = strictish.ingest(
            {**_article(sina, 130), "id": "c", "body": sina[130]["body"] + "\n(完)"}
        )
        if v.candidate_id:
            recorded = strictish.conn.execute(
                "SELECT thresholds ->> 'containment_threshold' FROM duplicate_candidates WHERE candidate_id = %s",
                [v.candidate_id],
            ).fetchone()[0]
            assert recorded == "0.75"


def test_seen_is_the_exact_layer_alone(dd, sina):
    a = sina[130]
    dd.ingest({"id": a["id"], "title": a["title"], "body": a["body"]})
    hit = dd.seen("\n  " + a["body"].replace("，", ","), a["title"])  # same after normalization
    assert (hit.verdict, hit.layer, hit.matched_id) == ("duplicate", "exact", a["id"])
    assert dd.seen(a["body"], a["title"] + "(转载)").verdict == "new"  # near, not exact
    assert dd.seen(a["body"] + "\n本文来自示例网。", a["title"]).verdict == "new"
    assert dd.seen("  ", None).verdict == "error"
    dd.conn.execute(
        "INSERT INTO dedup_whitelist (kind, content_sha1, created_by) "
        "SELECT 'text', content_sha1, 'test' FROM documents WHERE external_id = %s",
        [a["id"]],
    )
    assert dd.seen(a["body"], a["title"]).verdict == "new"  # whitelisted: never a duplicate


def test_an_item_delivered_again_is_answered_and_counted_once(dd, sina):
    """Re-delivery (a crawler's restart sends what was committed): the same
    source, id and text is answered with layer 'redelivery' and recorded once,
    whether it was stored, an exact copy or a near copy; the same text under
    another id, or from another source, or without an id, is a repost."""
    a, b = _article(sina, 60), _article(sina, 61)
    items = [
        {**a, "source": "s1"},
        {**a, "id": "exact-copy", "source": "s2"},  # exact duplicate of a
        {**b, "source": "s1"},
        {**b, "id": "near-copy", "body": b["body"][: len(b["body"]) * 4 // 5], "source": "s2"},
    ]
    first = list(dd.ingest_many(items))
    assert [(v.verdict, v.layer) for v in first] == [
        ("new", None),
        ("duplicate", "exact"),
        ("new", None),
        ("duplicate", first[3].layer),
    ]
    assert first[3].layer in ("simhash", "containment", "minhash")

    def counts():
        return dd.conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM document_sightings),"
            " (SELECT count(*) FROM duplicate_candidates),"
            " (SELECT sum(ingested) FROM dedup_daily_stats)"
        ).fetchone()

    before = counts()
    again = list(dd.ingest_many(items))
    assert [(v.verdict, v.layer) for v in again] == [("duplicate", "redelivery")] * 4
    assert again[0].doc_id == first[0].doc_id and again[2].doc_id == first[2].doc_id
    assert (again[1].candidate_id, again[3].candidate_id) == (
        first[1].candidate_id,
        first[3].candidate_id,
    )
    assert counts() == before
    # not re-deliveries: another id, another source, no id
    reposts = [
        {**a, "id": "another-id", "source": "s1"},
        {**a, "source": "s3"},
        {"title": a["title"], "body": a["body"], "source": "s1"},
    ]
    assert [(v.verdict, v.layer) for v in dd.ingest_many(reposts)] == [("duplicate", "exact")] * 3


def test_default_workers_follow_the_cpus():
    from dedup_pg.deduper import MAX_AUTO_WORKERS, default_workers

    assert default_workers(1) == 0
    assert default_workers(2) == 2 == MAX_AUTO_WORKERS
    assert default_workers(64) == MAX_AUTO_WORKERS
    assert default_workers() == default_workers(len(os.sched_getaffinity(0)))


def test_auto_workers_start_processes_for_more_than_one_batch(dd, sina, monkeypatch):
    import concurrent.futures

    from dedup_pg import deduper

    started = []

    class Pool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, workers, **kwargs):
            started.append(workers)
            super().__init__(workers, **kwargs)

    monkeypatch.setattr(deduper.concurrent.futures, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(deduper, "default_workers", lambda: 1)
    docs = [{"id": a["id"], "title": a["title"], "body": a["body"]} for a in sina[:4]]
    one = list(dd.ingest_many(docs[:2], batch_size=2))  # one batch: a thread
    assert started == []
    more = list(dd.ingest_many(docs, batch_size=2))  # two batches: the processes
    assert started == [1]
    assert [v.verdict for v in one] == ["new", "new"]
    assert [(v.verdict, v.layer) for v in more[:2]] == [("duplicate", "redelivery")] * 2
    assert [v.verdict for v in more[2:]] == ["new", "new"]


def test_an_items_arrays_may_be_json_arrays_or_array_literals(dd, sina):
    """dedup_pg sends an item's integer arrays as PostgreSQL array literals in
    JSON strings (Fingerprint.sql_item); dedup_ingest takes JSON arrays as well
    (another client's), and reads the same items, stripes and verdicts."""
    items = [_article(sina, i) for i in range(40)]
    items += [
        dict(a, id=a["id"] + "-copy", body=a["body"] + "\n转载请注明出处。") for a in items[:20]
    ]
    rows = prepare_batch(items, options=dd.options, max_chars=1_000_000).rows
    assert all(
        isinstance(r[k], str) and r[k].startswith("{") for r in rows for k in ARRAY_FIELDS if r[k]
    )
    as_json = [with_json_arrays(r) for r in rows]
    assert as_json[0]["clauses"] == json.loads("[" + rows[0]["clauses"][1:-1] + "]")
    read = (
        "SELECT array_agg(x ORDER BY x.pos)::text, "
        "dedup_lock_stripes_of(array_agg(x ORDER BY x.pos)) "
        "FROM jsonb_populate_recordset(NULL::dedup_item, %s) x"
    )
    literal_items, literal_stripes = dd.conn.execute(read, [Jsonb(rows)]).fetchone()
    assert dd.conn.execute(read, [Jsonb(as_json)]).fetchone() == (literal_items, literal_stripes)
    assert len(literal_stripes) > 1000

    def ingest(batch):
        dd._ensure_partitions(batch)
        sql = "SELECT pos, verdict, layer FROM dedup_ingest(%s)"
        return dd.conn.execute(sql, [Jsonb(batch)]).fetchall()

    verdicts = ingest(as_json[:40]) + ingest(as_json[40:])
    assert [v for _, v, _ in verdicts].count("duplicate") == 20
    assert (
        dd.conn.execute(
            "SELECT count(*) FROM documents WHERE external_id LIKE '%%-copy'"
        ).fetchone()[0]
        == 0
    )


def test_a_new_day_partition_is_read_by_key_before_its_first_analyze(dd, sina):
    """A day partition autovacuum has not analyzed yet (a new day's first
    minute, or longer) has no statistics; a check must still read the rows of
    its candidates there by key. The containment candidates' rows, read as a
    join, were planned as a scan of the whole partition (revision 0050)."""
    day = T0.date()
    dd.conn.execute("SELECT dedup_ensure_partitions(%s, %s)", [day, day])
    part = f"documents_p{day:%Y%m%d}"
    dd.conn.execute(f"ALTER TABLE {part} SET (autovacuum_enabled = false)")
    originals = [_article(sina, 300 + k) for k in range(150)]
    list(dd.ingest_many(originals))
    # never analyzed: no statistics (what the planner then guesses is the point)
    assert (
        dd.conn.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [part]).fetchone()[0]
        < 0
    )
    # copies a check finds by containment: each original's sentences, one in
    # five left out
    copies = []
    for a in originals:
        sentences = [x + "。" for x in a["body"].split("。") if x.strip()]
        if len(sentences) >= 8:
            kept = [x for i, x in enumerate(sentences) if i % 5 != 2]
            copies.append({**a, "id": "copy-" + a["id"], "body": "".join(kept)})
    copies = copies[:20]
    assert len(copies) == 20
    plans = _log_plans(dd)
    verdicts = dd.check_many(copies)
    dd.conn.execute("RESET client_min_messages")
    assert sum(v.layer == "containment" for v in verdicts) >= 10, verdicts
    candidates_read = [p for p in plans if "v_cont_docs" in p]
    assert candidates_read, "no plan of the containment candidates' read"
    scans = [p for p in plans if f"Seq Scan on {part}" in p]
    assert not scans, scans[0]


def test_sightings_are_read_by_doc_id_and_need_no_primary_key(dd, dsn, sina):
    """Revision 0072: document_sightings has one index, by doc_id, which a
    document's sightings are read through; sighting_id stays unique by
    construction (an identity column: a sighting cannot be given one). The
    downgrade puts the (sighting_id, seen_at) key back over the rows stored
    without it, and the upgrade drops it again."""
    from dedup_pg import database

    first = dd.ingest(_article(sina, 6))
    dd.ingest({**_article(sina, 6), "id": "repost-6", "source": "other"})

    def indexes(conn) -> list[str]:
        return [
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'document_sightings' ORDER BY 1"
            )
        ]

    assert indexes(dd.conn) == ["document_sightings_doc_id_idx"]
    with dd.conn.transaction():
        dd.conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in dd.conn.execute(
                "EXPLAIN SELECT * FROM document_sightings WHERE doc_id = %s", [first.doc_id]
            )
        )
    assert "doc_id_idx" in plan and "Seq Scan" not in plan, plan
    with pytest.raises(psycopg.errors.GeneratedAlways), dd.conn.transaction():
        dd.conn.execute(
            "INSERT INTO document_sightings (sighting_id, seen_at, doc_id, verdict)"
            " SELECT sighting_id, seen_at, doc_id, verdict FROM document_sightings LIMIT 1"
        )
    dd.close()

    database.downgrade(dsn, "0071")
    with Deduper(dsn, migrate=False) as old:
        assert indexes(old.conn) == ["document_sightings_doc_id_idx", "document_sightings_pkey"]
        assert old.conn.execute("SELECT count(*) FROM document_sightings").fetchone()[0] == 2
    database.migrate(dsn)
    with Deduper(dsn, migrate=False) as new:
        assert indexes(new.conn) == ["document_sightings_doc_id_idx"]
        again = new.ingest({**_article(sina, 6), "id": "repost-6b", "source": "third"})
        assert again.verdict == "duplicate"
        assert [
            r[0]
            for r in new.conn.execute(
                "SELECT external_id FROM document_sightings WHERE doc_id = %s ORDER BY sighting_id",
                [first.doc_id],
            )
        ] == [sina[6]["id"], "repost-6", "repost-6b"]
