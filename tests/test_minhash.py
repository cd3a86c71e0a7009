"""The MinHash layer and the fact check, on real Sina articles."""

from __future__ import annotations

import re

import psycopg
import pytest
from psycopg.types.json import Jsonb
from test_concurrency import WRITERS, _race

from dedup_pg import Deduper, minhash
from dedup_pg.deduper import prepare_batch
from dedup_pg.facts import fact_keys, facts

# SimHash and containment made blind, so only the MinHash layer can match.
HASHES_OFF = {
    "simhash_distance": 0,
    "simhash_review_distance": 0,
    "containment_threshold": 1.01,
    "containment_review_threshold": 1.01,
}
SYNONYMS = [
    ("表示", "称"),
    ("目前", "当前"),
    ("已经", "已"),
    ("进行", "开展"),
    ("公司", "企业"),
    ("发布", "公布"),
    ("但是", "不过"),
    ("因为", "由于"),
    ("可以", "能够"),
    ("非常", "十分"),
    ("记者", "本报记者"),
    ("今年", "本年"),
]


def synonyms(text: str, pairs=SYNONYMS) -> str:
    for a, b in pairs:
        text = text.replace(a, b)
    return text


def _shingles(text: str) -> set[str]:
    text = re.sub(r"\s+", "", text)
    return {text[i : i + minhash.SHINGLE] for i in range(len(text) - minhash.SHINGLE + 1)}


def test_signature_estimates_jaccard(sina):
    errors = []
    for a in sina[:60]:
        body = a["body"]
        if len(body) < 400:
            continue
        third = len(body) // 3
        other = body[:third] + body[2 * third :] + "本文来自示例网,转载请注明出处。"
        sa, sb = minhash.signature(body), minhash.signature(other)
        assert sa is not None and sb is not None and len(sa) == minhash.NUM_PERM
        x, y = _shingles(body), _shingles(other)
        errors.append(minhash.similarity(sa, sb) - len(x & y) / len(x | y))
    assert len(errors) >= 20
    assert abs(sum(errors) / len(errors)) < 0.03  # unbiased
    assert max(abs(e) for e in errors) < 0.2  # 128 permutations: sd ~0.044
    assert minhash.signature(sina[0]["body"]) == minhash.signature(sina[0]["body"])  # stable
    assert minhash.signature("今天上午,示例市举行新闻发布会。") is None  # too short


def test_compiled_kernels_equal_numpys(sina):
    # LLVM's loops must give numpy's values bit for bit, on real text and at
    # the edges (fewer characters than a 5-gram, one 5-gram, repeats, a
    # document longer than numpy's chunk, code points above the BMP)
    import numpy as np

    compiled = minhash.compiled_kernels()
    assert compiled is not minhash.NUMPY_KERNELS, "llvmlite is a dependency"
    texts = [a["body"] for a in sina[:300]] + [
        "",
        "abcd",
        "abcde",
        "哈" * 200,
        "".join(a["body"] for a in sina[:20]),
        "𠀀𠀁𠀂𠀃𠀄𠀅" * 30,
    ]
    for text in texts:
        chars = np.frombuffer("".join(text.split()).encode("utf-32-le"), dtype=np.uint32)
        if len(chars) >= minhash.SHINGLE:
            values = compiled.shingle_values(chars)
            assert np.array_equal(values, minhash.NUMPY_KERNELS.shingle_values(chars))
        hashes = minhash.shingle_hashes(text)
        if len(hashes):
            assert np.array_equal(compiled.minimums(hashes), minhash.NUMPY_KERNELS.minimums(hashes))


@pytest.mark.parametrize("cpu", [("x86-64", ""), ("x86-64-v3", ""), ("x86-64-v4", "")])
def test_kernels_compiled_for_other_cpus_equal_numpys(sina, cpu):
    # the machine code differs by CPU (scalar loops on a plain x86-64, AVX2's
    # emulated 64-bit products on v3, AVX-512's on v4): the values do not.
    # Compiled here, run here only where this CPU has the instructions.
    import platform

    import numpy as np

    from dedup_pg import _minhash_jit as jit

    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 CPU names")
    if cpu[0] == "x86-64-v4" and not _has_flags("avx512f", "avx512dq", "avx512vl", "avx512bw"):
        pytest.skip("this CPU has no AVX-512")
    if cpu[0] == "x86-64-v3" and not _has_flags("avx2", "bmi2", "fma"):
        pytest.skip("this CPU has no AVX2")
    kernels = jit.Kernels(minhash.SHINGLE, int(minhash._PRIME), minhash._A, minhash._B, cpu=cpu)
    reference = minhash.NUMPY_KERNELS
    empty = np.empty(0, dtype=np.uint64)
    assert np.array_equal(kernels.minimums(empty), reference.minimums(empty))
    assert len(kernels.shingle_values(np.zeros(4, dtype=np.uint32))) == 0
    for a in sina[:100]:
        chars = np.frombuffer("".join(a["body"].split()).encode("utf-32-le"), dtype=np.uint32)
        assert np.array_equal(kernels.shingle_values(chars), reference.shingle_values(chars))
        every_other = chars[::2]  # not contiguous: copied first
        assert np.array_equal(
            kernels.shingle_values(every_other), reference.shingle_values(every_other)
        )
        hashes = minhash.shingle_hashes(a["body"])
        assert np.array_equal(kernels.minimums(hashes), reference.minimums(hashes))


def _has_flags(*names: str) -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            flags = next(line for line in fh if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return False
    return set(names) <= set(flags)


def test_facts_differ_on_both_sides_only_for_another_story(dd):
    """dedup_facts_disagree, the fact check's core, on facts taken in Python."""

    def disagree(a: list[str], b: list[str]) -> bool:
        return dd.conn.execute(
            "SELECT dedup_facts_disagree(%s, %s, 0.15, 0.3)", [fact_keys(a), fact_keys(b)]
        ).fetchone()[0]

    a = facts("娜奥米·沃茨加盟《权力的游戏》前传试播集,2018年10月31日消息。")
    b = facts("乔什·怀特豪斯加盟《权力的游戏》前传剧集,2018年11月1日消息。")
    assert "2018" in a and "沃茨" in a and "怀特" in b
    assert disagree(a, b)
    assert not disagree(a, a + ["广告", "400"])  # one side adds: a copy with an ad
    assert not disagree(a, a[:2])  # one side drops: a truncated copy
    commentary = a + [f"事实{i}" for i in range(12)]  # a new text appending an old one
    assert disagree(commentary, a) and not disagree(a, commentary)


def test_synonym_rewrite_is_a_minhash_duplicate(dd, sina):
    originals = [a for a in sina[400:460] if len(a["body"]) > 600][:10]
    list(dd.ingest_many({"id": a["id"], "title": a["title"], "body": a["body"]} for a in originals))
    a = originals[3]
    copy = {"id": "syn", "title": synonyms(a["title"]), "body": synonyms(a["body"])}
    assert copy["body"] != a["body"]
    v = dd.ingest_batch([copy], thresholds=HASHES_OFF)[0]
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "minhash", a["id"]), v
    assert 0.5 <= v.score < 1.0
    row = dd.conn.execute(
        "SELECT body, layer, status, (thresholds ->> 'minhash_threshold')::float"
        " FROM duplicate_candidates WHERE candidate_id = %s",
        [v.candidate_id],
    ).fetchone()
    assert row == (copy["body"], "minhash", "auto", 0.5)
    # restorable: back as a document with its MinHash bands
    dd.conn.execute("SELECT restore_candidate(%s)", [v.candidate_id])
    assert dd.conn.execute(
        "SELECT cardinality(dedup_minhash_bands(b.signature))"
        " FROM document_minhash_bands b JOIN documents d USING (doc_id, seen_at)"
        " WHERE d.external_id = 'syn'"
    ).fetchall() == [(minhash.BANDS,)]
    # the layer can be turned off per call
    b = originals[5]
    other = {"id": "syn2", "title": synonyms(b["title"]), "body": synonyms(b["body"])}
    assert dd.check_many([other], thresholds=HASHES_OFF)[0].layer == "minhash"
    off = HASHES_OFF | {"minhash_threshold": None}
    unchecked = dd.check_many([other], thresholds=off)[0]
    assert unchecked.verdict == "new", unchecked


def test_a_minhash_candidate_below_the_review_band_reads_no_document(dd, sina):
    """Revision 0064: the MinHash layer reads its best candidate's documents
    row only when the candidate can decide: at or above the review threshold,
    or in gated mode, whose comparison takes the best candidate whatever its
    similarity. Below the band a check reads no documents row (the count of
    scans of documents' partitions in the check's own transaction), and the
    verdict is what it was. The item goes without clauses, so the containment
    layer reads nothing, and SimHash is blind (HASHES_OFF)."""
    originals = [a for a in sina[400:460] if len(a["body"]) > 600][:10]
    list(dd.ingest_many({"id": a["id"], "title": a["title"], "body": a["body"]} for a in originals))
    a = originals[3]
    copy = {"title": synonyms(a["title"]), "body": synonyms(a["body"])}
    item = prepare_batch([copy], options=dd.options, max_chars=1_000_000).rows[0]
    item |= {"clauses": None, "lead": None}
    # the backend's counts not yet reported (no report inside a transaction)
    scans = (
        "SELECT coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0)"
        " FROM pg_stat_xact_user_tables WHERE relname LIKE 'documents\\_p%%'"
    )

    def check(overrides):
        with dd.conn.transaction(force_rollback=True):
            before = dd.conn.execute(scans).fetchone()[0]
            row = dd.conn.execute(
                "SELECT verdict, layer, score, neighbours FROM dedup_ingest(%s, true, %s)",
                [Jsonb([item]), Jsonb(HASHES_OFF | overrides)],
            ).fetchone()
            return row, dd.conn.execute(scans).fetchone()[0] - before

    (verdict, layer, score, _), reads = check({})
    assert (verdict, layer) == ("duplicate", "minhash") and 0.5 <= score < 0.99
    assert reads >= 1  # the counter sees the candidate's row read
    (verdict, layer, score, _), reads = check(
        {"minhash_threshold": 0.99, "minhash_review_threshold": 0.99}
    )
    assert (verdict, layer, reads) == ("new", None, 0)
    # gated: the best candidate is read, and is the comparison's neighbour
    (verdict, _, _, neighbours), reads = check(
        {"minhash_threshold": 0.99, "minhash_review_threshold": 0.99, "semantic_mode": "gated"}
    )
    doc_id = dd.conn.execute(
        "SELECT doc_id FROM documents WHERE external_id = %s", [a["id"]]
    ).fetchone()[0]
    assert (verdict, neighbours, reads >= 1) == ("new", [doc_id], True)


#: Each stored document's signature as its 16-bit values (revision 0040 stores bits,
#: on the document's band row since revision 0041).
VALUES_SQL = (
    "SELECT d.external_id, dedup_minhash_values(b.signature)"
    " FROM documents d JOIN document_minhash_bands b USING (doc_id, seen_at)"
)


def test_signatures_as_bits_compare_as_the_values(dd, sina):
    """Revision 0040: a stored signature holds the 16-bit values as bits (on its
    band row since revision 0041), the item sends them ready
    (fingerprint.signature_bits, what SQL's dedup_minhash_bits makes of the
    values), dedup_minhash_values gives the values back, and
    dedup_minhash_similarity on the bits is the share of equal values on every
    pair of real signatures, near-duplicates included."""
    from dedup_pg.fingerprint import signature_bits

    texts = [a["body"] for a in sina[:40]]
    texts += [synonyms(t) for t in texts[:10]]  # pairs at every similarity
    texts += [t[: len(t) // 2] + t[len(t) // 2 :].replace("。", "，", 3) for t in texts[:10]]
    sigs = [s for s in map(minhash.signature, texts) if s is not None]
    conn = dd.conn
    bits = [signature_bits(s) for s in sigs]
    for s, b in zip(sigs, bits, strict=True):
        got = conn.execute(
            "SELECT dedup_minhash_bits(%s::smallint[])::text = %s::bit varying::text,"
            " dedup_minhash_values(%s::bit varying) = %s::smallint[]",
            (s, b, b, s),
        ).fetchone()
        assert got == (True, True)
    pairs = [(i, j) for i in range(len(sigs)) for j in range(len(sigs)) if i < j]
    sql = conn.execute(
        "SELECT dedup_minhash_similarity(a::bit varying, b::bit varying)"
        " FROM unnest(%s::text[], %s::text[]) u(a, b)",
        ([bits[i] for i, _ in pairs], [bits[j] for _, j in pairs]),
    ).fetchall()
    expected = [minhash.similarity(sigs[i], sigs[j]) for i, j in pairs]
    assert [r[0] for r in sql] == pytest.approx(expected, abs=0, rel=0)
    assert max(expected) > 0.5 and min(expected) < 0.1  # near and far pairs both met
    # other lengths and NULL: value by value, as the arrays were compared
    assert conn.execute(
        "SELECT dedup_minhash_similarity(%s::bit varying, %s::bit varying),"
        " dedup_minhash_similarity(NULL, %s::bit varying)",
        ("x" + bits[0][1:41], "x" + bits[0][1:37] + "0000", bits[0]),
    ).fetchone() == (0.9, 0.0)


def test_signatures_of_32_bits_become_their_low_16_on_upgrade(dd, dsn, sina):
    """Revision 0026: a store of 32-bit signatures (as an engine of before it
    computed them) is cut to their low 16 bits, which is what the code computes
    now, and its band keys are cut from those: a synonym rewrite of a stored
    text is still found by the MinHash layer alone. The downgrade keeps the 16
    bits (as integer[]) with band keys as revision 0025 cut them."""
    from dedup_pg import database

    originals = [a for a in sina[400:460] if len(a["body"]) > 600][:6]
    list(dd.ingest_many({"id": a["id"], "title": a["title"], "body": a["body"]} for a in originals))
    now = dict(dd.conn.execute(VALUES_SQL).fetchall())
    assert all(len(v) == minhash.NUM_PERM for v in now.values())
    dd.close()
    database.downgrade(dsn, "0025")
    with Deduper(dsn, migrate=False) as old:
        assert (
            old.conn.execute("SELECT pg_typeof(minhash)::text FROM documents LIMIT 1").fetchone()[0]
            == "integer[]"
        )
        # 32-bit values whose low halves are the stored ones, high halves anything
        old.conn.execute(
            "UPDATE documents SET minhash = ARRAY(SELECT (((i * 7919 + doc_id) % 32768) << 16)"
            " | (v & 65535) FROM unnest(minhash) WITH ORDINALITY u(v, i) ORDER BY i)"
        )
        old.conn.execute(
            "UPDATE document_minhash_bands b SET band_keys = dedup_minhash_bands(d.minhash)"
            " FROM documents d WHERE d.doc_id = b.doc_id AND d.seen_at = b.seen_at"
        )
        assert (
            old.conn.execute("SELECT max(v) FROM documents, unnest(minhash) v").fetchone()[0]
            > 65535
        )
    database.migrate(dsn)
    with Deduper(dsn, migrate=False) as new:
        assert dict(new.conn.execute(VALUES_SQL).fetchall()) == now
        rows = new.conn.execute(
            "SELECT dedup_minhash_values(b.signature), dedup_minhash_bands(b.signature)"
            " FROM documents d JOIN document_minhash_bands b USING (doc_id, seen_at)"
        ).fetchall()
        assert len(rows) == len(originals)
        assert all(keys == minhash.band_keys(values) for values, keys in rows)
        a = originals[2]
        copy = {"id": "syn", "title": synonyms(a["title"]), "body": synonyms(a["body"])}
        v = new.check_many([copy], thresholds=HASHES_OFF)[0]
        assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "minhash", a["id"]), v


def test_bands_12_of_3_find_what_an_index_of_16_holds(dd, dsn, sina):
    """Revision 0069: 12 band keys a signature, the first 12 of the 16 before.
    A store indexed under 16 keeps its index (not rebuilt by the upgrade): it
    holds every key of the 12, so a rewrite of a text stored under 16 is found
    as before, and its rows still answer for a 13th band's key until the index
    is rebuilt. New rows get 12 entries. The downgrade rebuilds the index, so
    a row stored under 12 answers for its 13th to 16th bands again."""
    from dedup_pg import database

    def found_by_band(conn, band: int, docs: dict) -> list:
        """The texts whose index entries answer for their band ``band`` (0-15,
        as revisions 0049 to 0068 cut 16); the index is the only place a 13th
        band's key can be found."""
        keys = [minhash.band_keys(values, bands=16)[band] for values in docs.values()]
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            return (
                conn.execute(
                    "SELECT array_agg(d.external_id ORDER BY d.external_id)"
                    " FROM document_minhash_bands b JOIN documents d USING (doc_id, seen_at)"
                    " WHERE dedup_minhash_bands(b.signature) && %s",
                    [keys],
                ).fetchone()[0]
                or []
            )

    first = [a for a in sina[520:600] if len(a["body"]) > 600][:8]
    list(dd.ingest_many({"id": a["id"], "title": a["title"], "body": a["body"]} for a in first[:4]))
    stored_12 = dict(dd.conn.execute(VALUES_SQL).fetchall())
    assert dd.conn.execute(
        "SELECT DISTINCT cardinality(dedup_minhash_bands(signature)) FROM document_minhash_bands"
    ).fetchall() == [(12,)]
    # under 12 keys a row answers for band 11, not for band 12
    assert found_by_band(dd.conn, 11, stored_12) == sorted(stored_12)
    assert found_by_band(dd.conn, 12, stored_12) == []
    dd.close()

    database.downgrade(dsn, "0068")
    with Deduper(dsn, migrate=False) as old:
        # rebuilt: the rows stored under 12 answer for bands 12-15 again
        assert found_by_band(old.conn, 15, stored_12) == sorted(stored_12)
        list(
            old.ingest_many(
                {"id": a["id"], "title": a["title"], "body": a["body"]} for a in first[4:]
            )
        )
        stored_16 = {k: v for k, v in old.conn.execute(VALUES_SQL).fetchall() if k not in stored_12}
        assert len(stored_16) == 4
    database.migrate(dsn)
    with Deduper(dsn, migrate=False) as new:
        # not rebuilt: the rows of 0068 still hold their 13th band's entry
        assert found_by_band(new.conn, 12, stored_16) == sorted(stored_16)
        assert found_by_band(new.conn, 12, stored_12) == sorted(stored_12)
        rows = new.conn.execute(
            "SELECT dedup_minhash_values(signature), dedup_minhash_bands(signature)"
            " FROM document_minhash_bands"
        ).fetchall()
        assert len(rows) == 8 and all(keys == minhash.band_keys(v) for v, keys in rows)
        assert all(len(keys) == minhash.BANDS == 12 for _, keys in rows)
        # a rewrite of a text stored under 16 is found by the MinHash layer alone
        a = first[5]
        copy = {"id": "syn", "title": synonyms(a["title"]), "body": synonyms(a["body"])}
        v = new.check_many([copy], thresholds=HASHES_OFF)[0]
        assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "minhash", a["id"]), v


def test_a_review_of_another_layer_is_compared_on_the_whole_signature(dd, sina):
    """Revision 0070: the stored text the SimHash or containment layer sends
    to review is compared on the whole signature, whether or not it shares a
    band: at or above minhash_threshold it is a MinHash duplicate. Here a
    synonym rewrite's original is made to share no band (the first value of
    each of its stored bands changed: 12 of 128 values), so the bands cannot
    find it; containment finds it for review, and the signature decides."""
    originals = [a for a in sina[400:460] if len(a["body"]) > 600][:10]
    list(dd.ingest_many({"id": a["id"], "title": a["title"], "body": a["body"]} for a in originals))
    copies = {
        a["id"]: {"id": "syn", "title": synonyms(a["title"]), "body": synonyms(a["body"])}
        for a in originals
    }
    found = {a["id"]: dd.check_many([copies[a["id"]]], thresholds=HASHES_OFF)[0] for a in originals}
    # a rewrite the bands find at 0.62 or more, found as a review by containment alone
    blind = HASHES_OFF | {"containment_review_threshold": 0.2, "minhash_threshold": None}
    a_id = next(
        k
        for k, v in found.items()
        if v.layer == "minhash"
        and v.matched_id == k
        and v.score >= 0.62
        and dd.check_many([copies[k]], thresholds=blind)[0].layer == "containment"
    )
    score = found[a_id].score
    # the first value of each band turned (its bits inverted): no band shared
    turned = "signature"
    for b in range(minhash.BANDS):
        at = b * minhash.BAND_ROWS * minhash.VALUE_BITS + 1
        turned = f"overlay({turned} PLACING ~substring({turned} FROM {at} FOR 16) FROM {at} FOR 16)"
    dd.conn.execute(
        f"UPDATE document_minhash_bands b SET signature = {turned} FROM documents d"
        " WHERE d.doc_id = b.doc_id AND d.seen_at = b.seen_at AND d.external_id = %s",
        [a_id],
    )
    # the bands alone no longer find it
    assert dd.check_many([copies[a_id]], thresholds=HASHES_OFF)[0].verdict == "new"
    # containment sends it to review; the whole signature makes it a duplicate
    v = dd.check_many(
        [copies[a_id]], thresholds=HASHES_OFF | {"containment_review_threshold": 0.2}
    )[0]
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "minhash", a_id), v
    assert 0.5 <= v.score < score
    # below minhash_threshold it stays containment's review
    v = dd.check_many(
        [copies[a_id]],
        thresholds=HASHES_OFF | {"containment_review_threshold": 0.2, "minhash_threshold": 0.99},
    )[0]
    assert (v.verdict, v.layer, v.matched_id) == ("review", "containment", a_id), v


def test_a_band_row_by_doc_id_reads_one_small_brin_range(dd, sina):
    """Revision 0071: the BRIN index on document_minhash_bands.doc_id has 8
    pages a range, so a row read by doc_id (revision 0070's comparison, a
    removal) reads at most 8 heap pages, not the default 128."""
    list(
        dd.ingest_many({"id": a["id"], "title": a["title"], "body": a["body"]} for a in sina[:400])
    )
    dd.conn.execute("VACUUM ANALYZE document_minhash_bands")
    doc_id, seen_at = dd.conn.execute(
        "SELECT doc_id, seen_at FROM document_minhash_bands ORDER BY doc_id LIMIT 1"
    ).fetchone()
    pages = dd.conn.execute(
        "SELECT sum(pg_relation_size(inhrelid)) / current_setting('block_size')::integer"
        " FROM pg_inherits WHERE inhparent = 'document_minhash_bands'::regclass"
    ).fetchone()[0]
    assert pages > 8  # more than one range
    with dd.conn.transaction():
        dd.conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in psycopg.ClientCursor(dd.conn).execute(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS off) SELECT signature FROM document_minhash_bands"
                " WHERE doc_id = %s AND seen_at = %s",
                [doc_id, seen_at],
            )
        )
    assert re.search(r"Bitmap Index Scan on document_minhash_bands_w\d+_doc_id_idx", plan), plan
    blocks = re.search(r"Heap Blocks: lossy=(\d+)", plan)
    assert blocks and int(blocks.group(1)) <= 8, plan


def test_facts_become_their_keys_on_upgrade(dd, dsn, sina):
    """Revision 0027: stored facts (text[], as an engine of before it stored
    them) become their keys, computed in SQL as dedup_pg.facts.fact_key
    computes them in Python. The downgrade drops them (their text is gone)."""
    from dedup_pg import database
    from dedup_pg.fingerprint import fingerprint

    originals = [a for a in sina[460:520] if len(a["body"]) > 600][:6]
    list(dd.ingest_many({"id": a["id"], "title": a["title"], "body": a["body"]} for a in originals))
    keys = dict(dd.conn.execute("SELECT external_id, facts FROM documents").fetchall())
    dd.close()
    database.downgrade(dsn, "0026")
    with Deduper(dsn, migrate=False) as old:
        assert old.conn.execute("SELECT count(facts) FROM documents").fetchone()[0] == 0
        for a in originals:
            text = list(fingerprint(a["body"], a["title"], old.options).facts)
            old.conn.execute(
                "UPDATE documents SET facts = %s::text[] WHERE external_id = %s", [text, a["id"]]
            )
    database.migrate(dsn)
    with Deduper(dsn, migrate=False) as new:
        stored = dict(new.conn.execute("SELECT external_id, facts FROM documents").fetchall())
    assert stored == keys and all(keys.values())
    assert keys == {
        a["id"]: fact_keys(fingerprint(a["body"], a["title"], new.options).facts) for a in originals
    }


def test_template_pair_goes_to_review_not_duplicate(dd, sina_all):
    """Two admissions brochures of one conservatory (academic vs professional
    master's): 0.87 character 8-gram Jaccard, different majors and codes."""
    by_id = {a["id"]: a for a in sina_all}
    first, second = by_id["sina18-ab758ed17a64"], by_id["sina18-78113133d36c"]
    dd.ingest({"id": first["id"], "title": first["title"], "body": first["body"]})
    v = dd.ingest({"id": second["id"], "title": second["title"], "body": second["body"]})
    assert v.verdict == "review" and v.matched_id == first["id"], v
    assert v.doc_id is not None  # kept
    unchecked = dd.check_many(
        [{"title": second["title"], "body": second["body"]}],
        thresholds={"facts_disagreement_share": None},
    )[0]
    assert unchecked.verdict == "duplicate"  # what the fact check prevented


@pytest.mark.slow
def test_rewrites_from_parallel_writers_give_one_new_document(dsn, sina):
    """Four writers, four synonym rewrites of one unseen story, at one moment:
    only the MinHash layer can see they are one story, and exactly one is new."""
    article = next(a for a in sina[500:] if len(a["body"]) > 1500)
    with Deduper(dsn) as dd:
        for name, value in HASHES_OFF.items():
            dd.set_setting(name, value)
    docs = [
        [
            {
                "id": f"w{w}",
                "title": article["title"],
                "body": synonyms(article["body"], SYNONYMS[w : w + 6]),
            }
        ]
        for w in range(WRITERS)
    ]
    out = _race(dsn, docs)
    assert sorted(v[1] for v in out) == ["duplicate"] * (WRITERS - 1) + ["new"], out
    assert "minhash" in {v[2] for v in out if v[1] == "duplicate"}, out
    with Deduper(dsn, migrate=False) as dd:
        assert dd.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1
