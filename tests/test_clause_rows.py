"""Clause rows (revision 0025): document_clauses holds a row for every clause
of a text under 32 clauses, else for the sample h & 3 = 0 and the text's first
three, and then all its clause hashes are on its row (documents.clauses). A
stored text is found through a row and the layers count every shared clause."""

from __future__ import annotations

import re

from dedup_pg import Deduper
from dedup_pg.fingerprint import fingerprint

from conftest import CLAUSE_ROWS_WHOLE_UNDER, clause_rows


def _rows(dd: Deduper, external_id: str) -> tuple[list[int] | None, list[int]]:
    """(documents.clauses, the document's rows in document_clauses, sorted)."""
    doc_id, clauses = dd.conn.execute(
        "SELECT doc_id, clauses FROM documents WHERE external_id = %s", (external_id,)
    ).fetchone()
    rows = dd.conn.execute(
        "SELECT clause_hash FROM document_clauses WHERE doc_id = %s ORDER BY 1", (doc_id,)
    ).fetchall()
    return clauses, [r[0] for r in rows]


def _sentences(text: str) -> list[str]:
    return re.findall(r"[^。！？]*[。！？]", text)


def _long(sina: list[dict], dd: Deduper, at_least: int = 40) -> list[tuple[dict, object]]:
    out = []
    for a in sina:
        fp = fingerprint(a["body"], a["title"], dd.options)
        if len(fp.clauses) >= at_least:
            out.append((a, fp))
    return out


def test_a_long_text_keeps_a_sample_and_its_lead_as_rows_and_every_clause_on_its_row(dd, sina):
    """A short text keeps a row for each clause and no array."""
    (long, fp), *_ = _long(sina, dd)

    def n_clauses(a: dict) -> int:
        return len(fingerprint(a["body"], a["title"], dd.options).clauses)

    short = next(a for a in sina if 5 <= n_clauses(a) < CLAUSE_ROWS_WHOLE_UNDER)
    dd.ingest({"id": "long", "title": long["title"], "body": long["body"]})
    dd.ingest({"id": "short", "title": short["title"], "body": short["body"]})

    clauses, rows = _rows(dd, "long")
    assert clauses == sorted(fp.clauses)
    assert rows == clause_rows(fp.clauses, fp.lead) != sorted(fp.clauses)
    assert len(rows) < len(clauses) / 2

    clauses, rows = _rows(dd, "short")  # a row for each clause, no array
    assert clauses is None
    assert rows == sorted(fingerprint(short["body"], short["title"], dd.options).clauses)


def test_a_truncated_recrawl_is_found_through_the_lead_rows(dd, sina):
    """A recrawl that kept only a long text's opening, none of whose clauses
    is in the sample: only the rows of the first three clauses can find it."""
    found = 0
    for i, (a, fp) in enumerate(_long(sina, dd)[:60]):
        sentences = _sentences(a["body"])
        for j in (1, 2, 3):
            head = "".join(sentences[:j])
            try:
                hf = fingerprint(head, None, dd.options)
            except ValueError:
                continue
            if (
                len(hf.clauses) >= 2
                and set(hf.clauses) <= set(fp.lead[:3])
                and all(h & 3 for h in hf.clauses)
            ):
                break
        else:
            continue
        dd.ingest({"id": f"full{i}", "title": a["title"], "body": a["body"]})
        _, rows = _rows(dd, f"full{i}")
        assert set(hf.clauses) <= set(rows)  # the lead rows, not the sample
        v = dd.ingest({"id": f"head{i}", "body": head})
        assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "containment", f"full{i}"), v
        found += 1
    assert found >= 3


def test_containment_counts_every_shared_clause_not_the_rows(dd, sina):
    """A long text's opening three quarters under another text's opening: the
    containment score is the clauses the two share, all of them, over the
    smaller text's (as Python counts them on the fingerprints)."""
    longs = _long(sina, dd, at_least=48)
    checked = differs = 0
    for i, ((a, fa), (b, _fb)) in enumerate(zip(longs[0::2], longs[1::2], strict=False)):
        if i >= 20:
            break
        a_sentences, b_sentences = _sentences(a["body"]), _sentences(b["body"])
        body = "".join(
            a_sentences[: 3 * len(a_sentences) // 4] + b_sentences[: len(b_sentences) // 3]
        )
        incoming = fingerprint(body, None, dd.options)
        shared = len(set(incoming.clauses) & set(fa.clauses))
        expected = shared / min(len(incoming.clauses), len(fa.clauses))
        dd.ingest({"id": f"a{i}", "title": a["title"], "body": a["body"]})
        v = dd.is_duplicate(body)
        if v.layer != "containment":
            continue
        assert v.matched_id == f"a{i}"
        assert abs(v.score - min(expected, 1.0)) < 1e-9, (v, shared, expected)
        # what the rows alone would have said (the stored text's sample and lead)
        rows = set(_rows(dd, f"a{i}")[1])
        on_rows = len(set(incoming.clauses) & rows) / min(len(incoming.clauses), len(rows))
        differs += abs(on_rows - expected) > 1e-9
        checked += 1
    assert checked >= 3 and differs >= 1


def test_the_checks_count_shared_clauses_from_the_probe_as_from_the_rows(dd, sina):
    """dedup_ingest counts the clauses a stored text shares with an item
    (the SimHash layer's overlap rule, the fact check) from what its clause
    probe found (dedup_found_shared), not from the stored text's rows read by
    doc_id. Checked at every call: dedup_found_shared wrapped so that it also
    reads the rows and raises when the two counts differ, over real articles,
    short and long, and copies the SimHash layer and the fact check decide
    (sentences shuffled, one left out, a line added)."""
    conn = dd.conn
    conn.execute("CREATE TABLE found_shared_checks (whole boolean, shared integer)")
    conn.execute(
        "ALTER FUNCTION dedup_found_shared(bigint[], bigint[], bigint[], integer[], bigint)"
        " RENAME TO dedup_found_shared_fast"
    )
    conn.execute("""
        CREATE FUNCTION dedup_found_shared(p_useful bigint[], p_clauses bigint[], p_found_docs bigint[],
                                           p_found_rows integer[], p_doc_id bigint)
        RETURNS integer LANGUAGE plpgsql AS $$
        DECLARE
            v_found integer := dedup_found_shared_fast(p_useful, p_clauses, p_found_docs, p_found_rows, p_doc_id);
            v_rows integer;
        BEGIN
            v_rows := dedup_shared_clauses(p_useful, dedup_document_clauses(
                p_doc_id, (SELECT d.seen_at FROM documents d WHERE d.doc_id = p_doc_id), p_clauses));
            IF v_found IS DISTINCT FROM v_rows THEN
                RAISE EXCEPTION 'document %: % shared clauses found, % on its rows', p_doc_id, v_found, v_rows;
            END IF;
            INSERT INTO found_shared_checks VALUES (p_clauses IS NULL, v_found);
            RETURN v_found;
        END $$""")
    originals = [a for a in sina if len(_sentences(a["body"])) >= 6][:80]
    list(
        dd.ingest_many([{"id": a["id"], "title": a["title"], "body": a["body"]} for a in originals])
    )
    copies = []
    for k, a in enumerate(originals):
        s = _sentences(a["body"])
        edited = {
            0: s[1:2] + s[:1] + s[2:],  # two sentences swapped
            1: s[:3] + s[4:],  # one left out
            2: s + ["本文来源：新浪网，转载请注明出处。"],  # a line added
        }[k % 3]
        copies.append({"id": f"copy-{k}", "title": a["title"], "body": "".join(edited)})
    verdicts = list(dd.ingest_many(copies))
    assert sum(v.verdict == "duplicate" for v in verdicts) >= 60
    counts = dict(
        conn.execute(
            "SELECT whole, count(*) FILTER (WHERE shared > 0) FROM found_shared_checks GROUP BY 1"
        ).fetchall()
    )
    # stored texts with a row for each clause and long ones counted on their array
    assert counts.get(True, 0) >= 20 and counts.get(False, 0) >= 5, counts
