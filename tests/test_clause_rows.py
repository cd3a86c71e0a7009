"""Clause rows (revisions 0025, 0039): document_clauses holds a row for every
clause of a text under 16 clauses, else for the sample h & 3 = 0, the text's
first three and every clause stored texts already hold, and then all its
clause hashes are on its row (documents.clauses). A stored text is found
through a row and the layers count every shared clause."""

from __future__ import annotations

import re

from dedup_pg import Deduper
from dedup_pg.fingerprint import fingerprint

from conftest import CLAUSE_ROWS_WHOLE_UNDER, clause_array, clause_rows


def _rows(dd: Deduper, external_id: str) -> tuple[list[int] | None, list[int]]:
    """(documents.clauses, the document's rows in document_clauses, sorted)."""
    doc_id, clauses = dd.conn.execute(
        "SELECT doc_id, clauses FROM documents WHERE external_id = %s", (external_id,)
    ).fetchone()
    return clauses, _rows_of(dd, doc_id)


def _rows_of(dd: Deduper, doc_id: int) -> list[int]:
    rows = dd.conn.execute(
        "SELECT clause_hash FROM document_clauses WHERE doc_id = %s ORDER BY 1", (doc_id,)
    ).fetchall()
    return [r[0] for r in rows]


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


# A site template (nav bar, "related" block, footer) as crawled pages carry it.
TEMPLATE_HEAD = ["首页 | 新闻 | 财经 | 科技 | 体育 | 娱乐", "您当前的位置：首页 > 新闻中心 > 正文"]
TEMPLATE_FOOT = [
    "相关推荐",
    "教育部发布通知部署今年秋季学期开学工作",
    "国产新能源汽车销量连续三个月同比增长超过百分之五十",
    "专家解读：冬季流感高发期如何做好家庭防护",
    "全国多地出台政策支持高校毕业生就业创业",
    "关于我们 | 联系我们 | 广告服务 | 网站地图 | 版权声明",
    "Copyright © 2005-2018 华夏资讯网 版权所有 京ICP备05012345号",
]


def _in_template(body: str) -> str:
    return "\n".join([*TEMPLATE_HEAD, body, *TEMPLATE_FOOT])


def test_a_long_text_keeps_a_row_for_each_clause_stored_texts_already_hold(dd, sina):
    """The template's lines, held by the pages stored before, get rows in each
    long page, sampled or not: so they become boilerplate (held by five
    texts) and stop counting, and a short page in the template is not taken
    for a part of every long one. With rows for the sample alone, the lines
    outside it were held by the short page only: each long page shared them
    with it (bench/quality.py's template probe: 7% -> 15% review)."""
    short = {
        "id": "caption",
        "body": _in_template("图为11月4日晚拍摄的国家会展中心夜景，灯光璀璨。"),
    }
    assert dd.ingest(short).verdict == "new"
    template = fingerprint(short["body"], None, dd.options).clauses
    longs = _long(sina, dd, at_least=CLAUSE_ROWS_WHOLE_UNDER + 4)[:8]
    verdicts = []
    for a, _fp in longs:
        page = {"id": a["id"], "title": a["title"], "body": _in_template(a["body"])}
        verdicts.append(dd.ingest(page).verdict)
        fp = fingerprint(page["body"], page["title"], dd.options)
        clauses, rows = _rows(dd, a["id"])
        assert clauses == clause_array(fp.clauses)
        held = [h for h in fp.clauses if h in template]
        assert rows == clause_rows(fp.clauses, fp.lead, tuple(held))
        assert any(h & 3 for h in held)  # template lines outside the sample have rows
    # the first pages share the template with the short page (review); once
    # five texts hold its lines, they are boilerplate and the pages are new
    assert verdicts[4:] == ["new"] * (len(longs) - 4), verdicts


def test_a_document_stored_again_from_its_item_gets_the_same_rows(dd, sina):
    """dedup_document_item (a kept document recorded as a candidate: the
    semantic layer's demotion, the rebuild) carries the rows the document had
    beyond its sample, the held ones included; stored again from it
    (dedup_store_document: a restore), the document gets the same rows."""
    assert dd.ingest({"id": "caption", "body": _in_template("图为夜景，灯光璀璨，游人如织。")})
    (a, _fp), *_ = _long(sina, dd, at_least=CLAUSE_ROWS_WHOLE_UNDER + 4)
    dd.ingest({"id": a["id"], "title": a["title"], "body": _in_template(a["body"])})
    _, before = _rows(dd, a["id"])
    fp = fingerprint(_in_template(a["body"]), a["title"], dd.options)
    assert set(before) - set(clause_rows(fp.clauses, fp.lead))  # held rows beyond the sample
    doc_id, seen_at = dd.conn.execute(
        "SELECT doc_id, seen_at FROM documents WHERE external_id = %s", (a["id"],)
    ).fetchone()
    item = dd.conn.execute(
        "SELECT dedup_document_item(%s, %s)::text", (doc_id, seen_at)
    ).fetchone()[0]
    dd.conn.execute("SELECT dedup_remove_document(%s, %s)", (doc_id, seen_at))
    assert _rows_of(dd, doc_id) == []
    dd.conn.execute(
        "SELECT dedup_store_document(i, %s, (i).lead) FROM (SELECT %s::dedup_item AS i) x",
        (doc_id, item),
    )
    assert _rows(dd, a["id"])[1] == before
