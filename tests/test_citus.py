"""dedup-pg on a real Citus cluster: a coordinator and two workers on
127.0.0.1 (tests/citus_cluster.py builds Citus from ../shared/vendor once per
machine). Each test gets a new database on every node, distributed by the code
``dedup-pg init --citus`` runs; verdicts are compared with a single-node
database fed the same stream."""

from __future__ import annotations

import difflib
import json
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.types.json import Jsonb
from test_concurrency import WRITERS, _race, near_same_writers

from dedup_pg import Deduper, database, minhash, partitions, semantic
from dedup_pg.cli import main as cli
from dedup_pg.deduper import prepare_batch
from dedup_pg.sqlfiles import queries

from conftest import allow_backfill, article_item, dxy_tuning_pair, first_sentence_cut

pytestmark = pytest.mark.slow

DISTRIBUTED = {
    "documents": "doc_id",
    "document_digests": "content_sha1",
    "document_clauses": "clause_hash",
    "document_simhash_bands": "band_key",
    "document_minhash_bands": "doc_id",
    "document_sightings": "sighting_id",
    "duplicate_candidates": "candidate_id",
    "document_embeddings": "doc_id",
}


def _stream(sina: list[dict]) -> list[dict]:
    """Originals, then exact copies, banner-added copies (containment),
    truncated copies and re-titled copies of some of them, interleaved."""
    originals = [{"id": d["id"], "title": d["title"], "body": d["body"]} for d in sina[:40]]
    copies = []
    for i, d in enumerate(originals[:20]):
        kind = i % 4
        body = d["body"]
        if kind == 0:
            copy = {"title": d["title"], "body": body}
        elif kind == 1:
            copy = {
                "title": d["title"],
                "body": body + "\n(来源:乙报 编辑:丙)\n欢迎关注丁网官方微博",
            }
        elif kind == 2:
            copy = {"title": d["title"], "body": "。".join(body.split("。")[:-2]) + "。"}
        else:
            copy = {"title": "转载:" + d["title"], "body": body.replace("，", ",")}
        copies.append({"id": f"copy{kind}-{d['id']}", **copy})
    return originals[:20] + [x for pair in zip(originals[20:], copies, strict=True) for x in pair]


def _verdicts(dsn: str, docs: list[dict], batch_size: int = 25) -> list[tuple]:
    with Deduper(dsn, batch_size=batch_size) as dd:
        return [
            (v.id, v.verdict, v.layer, v.matched_id, round(v.score or 0, 6))
            for v in dd.ingest_many(docs)
        ]


def _shard_rows(dsn: str, table: str) -> dict[str, int]:
    """Rows of a distributed table per worker (host:port), counted on the shards."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            """SELECT s.nodename || ':' || s.nodeport, sum(r.result::bigint)
                 FROM run_command_on_shards(%s, 'SELECT count(*) FROM %%s') r
                 JOIN citus_shards s ON s.shardid = r.shardid
                GROUP BY 1""",
            [table],
        ).fetchall()
    return {node: int(n) for node, n in rows}


def _simhash_band_shard_options(dsn: str) -> list[tuple[str, str]]:
    """(partition, its shard's reloptions) for every shard of every week
    partition of document_simhash_bands, read on the workers."""
    out = []
    with psycopg.connect(dsn) as conn:
        parts = conn.execute(
            "SELECT inhrelid::regclass::text FROM pg_inherits"
            " WHERE inhparent = 'document_simhash_bands'::regclass"
        ).fetchall()
        for (part,) in parts:
            out += conn.execute(
                "SELECT %s, r.result FROM run_command_on_shards(%s,"
                " $$SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class"
                " WHERE oid = '%%s'::regclass$$) r",
                [part, part],
            ).fetchall()
    return out


VACUUMED_EVERY = "autovacuum_vacuum_insert_threshold=20000,autovacuum_vacuum_insert_scale_factor=0"


def test_simhash_band_shards_are_vacuumed_every_20000_rows(citus_dsn):
    """Revision 0068's settings reach the workers: autovacuum runs there, on
    the shards of each SimHash band week partition."""
    with psycopg.connect(citus_dsn) as conn:
        conn.execute("SELECT dedup_ensure_partitions(current_date - 7, current_date)")
        conn.commit()
    shards = _simhash_band_shard_options(citus_dsn)
    assert len({part for part, _ in shards}) >= 2 and len(shards) >= 2 * 2
    assert all(options == VACUUMED_EVERY for _, options in shards), shards


def test_init_distributes_the_schema(citus_cluster, citus_dsn):
    with psycopg.connect(citus_dsn) as conn:
        rows = conn.execute(
            "SELECT logicalrelid::text, partmethod, column_to_column_name(logicalrelid, partkey)"
            " FROM pg_dist_partition"
        ).fetchall()
        kinds = {name: (method, column) for name, method, column in rows}
        shards = conn.execute(
            "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'documents'::regclass"
        ).fetchone()[0]
    for table, column in DISTRIBUTED.items():
        assert kinds[table] == ("h", column), table
    # on the coordinator: the lock stripes (DISTRIBUTION.md) and the small tables
    assert set(kinds) == set(DISTRIBUTED)
    assert shards == 2  # spread over both workers
    assert database.current_revision(citus_dsn) == database.head_revision()

    # the CLI: an empty Citus database is distributed by init --citus
    target = citus_cluster.create_database("citus_cli")
    try:
        result = CliRunner().invoke(cli, ["init", "--citus", "--dsn", target])
        assert result.exit_code == 0, result.output
        assert f"revision {database.head_revision()}" in result.output
        with psycopg.connect(target) as conn:
            assert conn.execute("SELECT count(*) FROM pg_dist_partition").fetchone()[0] == len(
                DISTRIBUTED
            )
    finally:
        citus_cluster.drop_database("citus_cli")
    # and a server without Citus is refused, saying why
    plain = CliRunner().invoke(cli, ["init", "--citus", "--dsn", citus_cluster.dsn("template1")])
    assert plain.exit_code != 0 and "citus extension" in plain.output


def test_exact_and_near_duplicates_same_verdicts_as_one_node(citus_dsn, dsn, sina):
    docs = _stream(sina)
    on_cluster = _verdicts(citus_dsn, docs)
    on_one_node = _verdicts(dsn, docs)
    assert on_cluster == on_one_node
    layers = {v[2] for v in on_cluster if v[1] != "new"}
    assert {"exact", "containment"} <= layers, on_cluster
    per_node = _shard_rows(citus_dsn, "documents")
    assert len(per_node) == 2 and all(n > 0 for n in per_node.values()), per_node


def test_whole_text_containment_same_verdicts_as_one_node(citus_dsn, dsn, dxy):
    """Revision 0031 on the cluster: the tuning set's short items (a repost
    under a hashtag line, a flash cut to its first sentence), each after an
    unrelated item sharing nothing, are containment duplicates as on one node."""
    docs = []
    for line in (1474, 1616):
        _, a, b = dxy_tuning_pair(dxy, line)
        for side, item in (("a", a), ("b", b)):
            docs.append({"id": f"{line}{side}", "title": item["title"], "body": item["body"]})
    on_cluster = _verdicts(citus_dsn, docs, batch_size=1)
    assert on_cluster == _verdicts(dsn, docs, batch_size=1)
    assert [v[1:4] for v in on_cluster if v[0].endswith("b")] == [
        ("duplicate", "containment", "1474a"),
        ("duplicate", "containment", "1616a"),
    ]


def test_a_failed_batch_is_rolled_back_on_every_node(citus_dsn, sina):
    good = [{"id": d["id"], "title": d["title"], "body": d["body"]} for d in sina[:20]]
    with Deduper(citus_dsn) as dd:
        rows = prepare_batch(good, **dd._prepare_args()).rows
        dd._ensure_partitions(rows)
        dd.conn.commit()
        # the last item is broken: the SQL fails after storing the others
        broken = [dict(r) for r in rows]
        broken[-1]["sha1"] = "not hex"
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            dd.conn.execute(
                queries()["ingest"],
                {"items": Jsonb(broken), "dry_run": False, "overrides": Jsonb({})},
            )
        dd.conn.rollback()
        for table in DISTRIBUTED:
            assert sum(_shard_rows(citus_dsn, table).values()) == 0, table
        for node in _nodes(citus_dsn):
            with psycopg.connect(node) as conn:
                assert conn.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone()[0] == 0
        # the same batch, unbroken, stores rows on both workers
        dd.conn.execute(
            queries()["ingest"], {"items": Jsonb(rows), "dry_run": False, "overrides": Jsonb({})}
        ).fetchall()
        dd.conn.commit()
    per_node = _shard_rows(citus_dsn, "documents")
    assert sum(per_node.values()) == 20 and len(per_node) == 2, per_node


def _nodes(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT nodename, nodeport FROM pg_dist_node").fetchall()
        dbname = conn.info.dbname
    return [f"host={h} port={p} user=postgres dbname={dbname}" for h, p in rows]


def test_same_text_from_parallel_writers_gives_one_new_document(citus_dsn, sina):
    rounds = [sina[i] for i in range(5)]
    docs = [
        [{"id": f"w{w}-r{r}", "title": a["title"], "body": a["body"]} for r, a in enumerate(rounds)]
        for w in range(WRITERS)
    ]
    out = _race(citus_dsn, docs)
    for r in range(len(rounds)):
        verdicts = [v for v in out if v[0].endswith(f"-r{r}")]
        assert sorted(v[1] for v in verdicts) == ["duplicate"] * (WRITERS - 1) + ["new"], verdicts
    with psycopg.connect(citus_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == len(rounds)


def test_near_same_text_from_parallel_writers_gives_one_new_document(citus_dsn, sina):
    docs = near_same_writers(sina[10])
    out = _race(citus_dsn, docs)
    assert sorted(v[1] for v in out) == ["duplicate"] * (WRITERS - 1) + ["new"], out
    with psycopg.connect(citus_dsn) as conn:
        (new_id,) = conn.execute("SELECT doc_id FROM documents").fetchone()
    assert all(v[3] == new_id for v in out if v[1] == "duplicate"), out


def test_partition_drop_removes_old_days_on_every_node(citus_dsn, sina):
    allow_backfill(citus_dsn)
    now = datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)
    old, recent = now - timedelta(days=20), now - timedelta(days=1)
    docs = [
        {
            "id": d["id"],
            "title": d["title"],
            "body": d["body"],
            "seen_at": (old if i < 5 else recent),
        }
        for i, d in enumerate(sina[:10])
    ]
    # an exact copy kept in a day that stays, of a text whose day goes: its
    # candidate holds the text by reference until the drop gives it the text
    a = sina[20]
    first = {"id": "first", "title": a["title"], "body": a["body"], "seen_at": now - timedelta(12)}
    copy = {**first, "id": "copy", "source": "elsewhere", "seen_at": now - timedelta(8)}
    _verdicts(citus_dsn, docs + [first])
    (v,) = _verdicts(citus_dsn, [copy])
    assert v[1] == "duplicate", v
    body = "SELECT body FROM duplicate_candidates WHERE external_id = 'copy'"
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        assert conn.execute(body).fetchone() == (None,)
        dropped = partitions.drop_older_than(conn, 10)
        assert conn.execute(body).fetchone() == (a["body"],)
        assert any(name.startswith("documents_p") for name in dropped)
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 5
        assert conn.execute("SELECT count(*) FROM document_digests").fetchone()[0] == 5
        assert (
            conn.execute(
                "SELECT count(*) FROM document_clauses WHERE seen_at < %s",
                [old + timedelta(days=1)],  # the week of the old days is gone
            ).fetchone()[0]
            == 0
        )
    # gone from the workers too, not only from the coordinator's metadata
    for node in _nodes(citus_dsn):
        with psycopg.connect(node) as conn:
            left = conn.execute(
                "SELECT count(*) FROM pg_class WHERE relname ~ %s", [f"^documents_p{old:%Y%m%d}"]
            ).fetchone()[0]
            assert left == 0, node


def test_compact_packs_an_ended_weeks_shards(citus_dsn, sina):
    """``partitions compact`` on the cluster: the ended week's btree indexes
    are packed on the workers' shards (fillfactor 100), and checks give the
    same verdicts after."""
    allow_backfill(citus_dsn)
    ended = datetime.now(timezone.utc) - timedelta(days=14)
    docs = [article_item(a, ended + timedelta(seconds=i)) for i, a in enumerate(sina[:60])]
    _verdicts(citus_dsn, docs)
    edits = [first_sentence_cut(d, "edit") for d in docs[::6]]

    def checks() -> list[tuple]:
        with Deduper(citus_dsn, migrate=False) as dd:
            return [(v.verdict, v.layer, v.matched_id) for v in dd.check_many(edits)]

    before = checks()
    assert sum(v == "duplicate" for v, _, _ in before) >= 5, before
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        done = partitions.compact_closed_weeks(conn)
        assert {c.table for c in done} == {"document_clauses", "document_simhash_bands"}
        assert partitions.compact_closed_weeks(conn) == []
    # the sizes are the shards' (the coordinator's partitions are empty)
    assert all(c.bytes_before > 8192 * 4 and c.bytes_after > 8192 * 4 for c in done), done
    # the btree indexes of the packed partitions' shards, on whichever nodes hold them
    shards = []
    for node in _nodes(citus_dsn):
        with psycopg.connect(node) as conn:
            conn.execute("SET citus.override_table_visibility = off")  # shards are hidden
            shards += conn.execute(
                "SELECT i.relname, array_to_string(i.reloptions, ',') FROM pg_index x"
                " JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid"
                " JOIN pg_am a ON a.oid = i.relam WHERE a.amname = 'btree' AND t.relname ~ %s",
                ["^(" + "|".join(c.partition for c in done) + ")_[0-9]+$"],
            ).fetchall()
    assert len(shards) >= 4 and all(options == "fillfactor=100" for _, options in shards), shards
    assert checks() == before


def test_review_restore_and_dismiss(citus_dsn, sina):
    a = {"id": "a", "title": sina[0]["title"], "body": sina[0]["body"]}
    copy = {"id": "b", "title": a["title"], "body": a["body"]}
    with Deduper(citus_dsn) as dd:
        first, second = dd.ingest_many([a, copy])
        assert (first.verdict, second.verdict, second.layer) == ("new", "duplicate", "exact")
        restored = dd.conn.execute(
            "SELECT status, doc_id FROM restore_candidate(%s, 'not a copy')", [second.candidate_id]
        ).fetchone()
        dd.conn.commit()
        assert restored[0] == "restored" and restored[1] is not None
        # whitelisted (a reference table, read on the workers): the text is new now
        again = dd.ingest_batch([{"id": "c", "title": a["title"], "body": a["body"]}])[0]
        assert again.verdict == "new"
        assert (
            dd.conn.execute(
                "SELECT count(*) FROM document_sightings WHERE candidate_id = %s AND verdict = 'restored'",
                [second.candidate_id],
            ).fetchone()[0]
            == 1
        )
        # the review views (their Citus forms, sql/citus/70_review.sql) run
        clusters = dd.conn.execute(
            "SELECT count(*), sum(sightings) FROM document_clusters"
        ).fetchone()
        direct = dd.conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM document_sightings)"
        ).fetchone()
        assert clusters == direct and direct[0] == 3, (clusters, direct)
        assert dd.conn.execute("SELECT count(*) FROM review_queue").fetchone()[0] == 0
        confirmed = dd.conn.execute(
            "SELECT status FROM confirm_candidate(%s)", [second.candidate_id]
        ).fetchone()[0]
        dd.conn.commit()
        assert confirmed == "confirmed"
        assert (
            dd.conn.execute(
                "SELECT count(*) FROM documents WHERE doc_id = %s", [restored[1]]
            ).fetchone()[0]
            == 0
        )


def test_semantic_layer_vector_search(citus_dsn, sina):
    from test_semantic import HASHES_OFF, rewrite

    from dedup_pg.embeddings import Usem3Embedder

    articles = [
        {"id": d["id"], "title": d["title"], "body": d["body"]}
        for d in sina[200:230]
        if len(d["body"]) > 300
    ][:12]
    with Deduper(citus_dsn, batch_size=50, embedder=Usem3Embedder()) as dd:
        dd.set_setting("semantic_mode", "always")
        assert {v.verdict for v in dd.ingest_many(articles)} == {"new"}
        assert semantic.active_model(dd.conn) is not None
        copy = rewrite(articles[5])
        v = dd.ingest_batch([copy], thresholds=HASHES_OFF)[0]
        assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "semantic", articles[5]["id"]), (
            v.error
        )
        dd.set_setting("semantic_mode", "gated")
        copy = rewrite(articles[3])
        g = dd.ingest_batch([copy], thresholds=HASHES_OFF)[0]
        assert (g.verdict, g.layer, g.matched_id) == ("duplicate", "semantic", articles[3]["id"])
        # the vectors live on the workers, beside their documents
        assert sum(_shard_rows(citus_dsn, "document_embeddings").values()) == len(articles)


@pytest.mark.parametrize("index_kind", ["halfvec", "binary"])
def test_semantic_search_and_rebuild_through_either_index_same_as_one_node(
    citus_dsn, dsn, sina, index_kind
):
    """A model's index of either kind (revision 0018) on the cluster: each
    worker's shards hold it; a check finds a rewrite through it, and a rebuild
    (dedup_rebuild_vector_pairs' Citus form) turns a rewrite kept while the
    semantic layer was blind into the semantic duplicate of its original:
    the same verdicts, scores, report and candidates as a single node."""
    from test_semantic import HASHES_OFF, rewrite

    from dedup_pg import rebuild as rb
    from dedup_pg.embeddings import Usem3Embedder

    articles = [
        {"id": d["id"], "title": d["title"], "body": d["body"]}
        for d in sina[200:230]
        if len(d["body"]) > 300
    ][:12]
    copy = rewrite(articles[5])
    blind = HASHES_OFF | {"semantic_duplicate": 1.0, "semantic_review": 1.0}
    embedder = Usem3Embedder()
    out = {}
    for name, target in (("cluster", citus_dsn), ("one node", dsn)):
        with Deduper(target, batch_size=50, embedder=embedder) as dd:
            dd.set_setting("semantic_mode", "always")
            list(dd.ingest_many(articles))
            assert semantic.set_index_kind(dd.conn, "usem3", index_kind).index_kind == index_kind
            c = dd.check_many([rewrite(articles[3])], thresholds=HASHES_OFF)[0]
            kept = dd.ingest_batch([copy], thresholds=blind)[0].verdict
            report = rb.rebuild(dd.conn, options=dd.options, overrides=HASHES_OFF)
            names = dict(dd.conn.execute("SELECT doc_id, external_id FROM documents").fetchall())
            rows = dd.conn.execute(
                "SELECT external_id, layer, status, matched_doc_id FROM duplicate_candidates"
            ).fetchall()
            out[name] = (
                (c.verdict, c.layer, c.matched_id, round(c.score or 0, 6)),
                kept,
                dict(report.duplicates),
                dict(report.reviews),
                sorted((r[0], r[1], r[2], names.get(r[3])) for r in rows),
            )
    assert out["cluster"] == out["one node"]
    assert out["cluster"][0][:3] == ("duplicate", "semantic", articles[3]["id"])
    assert out["cluster"][1] == "new" and out["cluster"][2] == {"semantic": 1}
    assert (copy["id"], "semantic", "auto", articles[5]["id"]) in out["cluster"][4]
    ops = "bit_hamming_ops" if index_kind == "binary" else "halfvec_cosine_ops"
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        per_worker = conn.execute(
            "SELECT result::integer FROM run_command_on_workers("
            f"$$SELECT count(*) FROM pg_indexes WHERE indexdef LIKE '%{ops}%'$$)"
        ).fetchall()
        # the search's hnsw.ef_search reaches the shards' index scans (80 for
        # a binary index: its re-rank list; set_config() alone stays on the
        # coordinator, and the workers searched with pgvector's default)
        expected = "80" if index_kind == "binary" else "64"
        on_shards = (
            "SELECT array_agg(DISTINCT current_setting('hnsw.ef_search', true))"
            " FROM documents WHERE doc_id > 0"
        )
        model_id = semantic.active_model(conn).model_id
        for call in (
            "SELECT count(*) FROM dedup_rebuild_vector_pairs()",
            f"SELECT count(*) FROM dedup_ingest_semantic('[]', '[]', {model_id}::smallint, true)",
        ):
            with conn.transaction():
                conn.execute(call)
                assert (
                    conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0]
                    == expected
                )
                assert conn.execute(on_shards).fetchone()[0] == [expected], call
    assert len(per_worker) == 2 and all(n > 0 for (n,) in per_worker), per_worker


def test_rebuild_of_a_bulk_loaded_corpus_same_as_one_node(citus_dsn, dsn, sina, tmp_path):
    """test_rebuild's corpus (originals, reposts, exact copies, truncated
    recrawls a day later) loaded by ``dedup-pg rebuild --input`` on the
    cluster and on a single node: the same documents kept, the same candidates
    matched to the same originals, the same sightings, the same report; a
    second rebuild changes nothing on either."""
    import json

    from test_rebuild import candidates, corpus, kept_ids

    def candidates_on_cluster(conn: psycopg.Connection) -> dict[str, tuple]:
        """test_rebuild.candidates in two statements (its join of candidates
        with documents by matched_doc_id is not co-located: Citus refuses it)."""
        names = dict(conn.execute("SELECT doc_id, external_id FROM documents").fetchall())
        rows = conn.execute(
            "SELECT external_id, layer, status, matched_doc_id FROM duplicate_candidates"
        ).fetchall()
        return {r[0]: (r[1], r[2], names.get(r[3])) for r in rows}

    docs = corpus(sina)
    src = tmp_path / "corpus.jsonl"
    src.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs), encoding="utf-8")
    allow_backfill(citus_dsn)
    allow_backfill(dsn)
    runner = CliRunner()
    reports = {}
    for name, target in (("cluster", citus_dsn), ("one node", dsn)):
        result = runner.invoke(
            cli, ["rebuild", "--dsn", target, "--input", str(src), "--format", "json"]
        )
        assert result.exit_code == 0, (name, result.output)
        reports[name] = json.loads(result.stdout)
    for report in reports.values():
        report.pop("seconds", None)
    assert reports["cluster"] == reports["one node"]
    assert sum(reports["cluster"]["duplicates"].values()) >= 85
    assert reports["cluster"]["reviews"] and reports["cluster"]["rounds"] >= 2  # reviews, demotions
    sightings = (
        "SELECT verdict, layer, count(*) FROM document_sightings GROUP BY 1, 2 ORDER BY 1, 2"
    )
    with psycopg.connect(citus_dsn) as c, psycopg.connect(dsn) as s:
        assert kept_ids(c) == kept_ids(s)
        assert candidates_on_cluster(c) == candidates(s)
        assert len(candidates(s)) >= 85
        assert c.execute(sightings).fetchall() == s.execute(sightings).fetchall()
    # the rows are on the workers
    assert len(_shard_rows(citus_dsn, "duplicate_candidates")) == 2
    again = runner.invoke(cli, ["rebuild", "--dsn", citus_dsn, "--format", "json"])
    assert again.exit_code == 0, again.output
    assert sum(json.loads(again.stdout)["duplicates"].values()) == 0


def test_refingerprint_then_rebuild_same_as_one_node(citus_dsn, dsn, sina):
    """test_rebuild's refingerprint case on the cluster and on a single node:
    a marker that made 20 copies distinct becomes noise; refingerprint
    (interrupted after a batch, resumed) rewrites the stored fingerprints as
    ingest would, and the rebuild that follows finds the 20 exact duplicates:
    the same fingerprints, digests, report and candidates on both."""
    from test_rebuild import T0, Interrupted, _expected, _stored, corpus

    from dedup_pg import rebuild as rb

    docs = corpus(sina, n=250)[:250]
    marked = [
        {**d, "id": d["id"] + "-m", "body": d["body"].replace("。", "。【示例网】", 1),
         "seen_at": (T0 + timedelta(days=3, minutes=i)).isoformat()}
        for i, d in enumerate(docs[:20])
    ]  # fmt: skip

    def stop(done: int, total: int, changed: int) -> None:
        raise Interrupted

    out = {}
    for name, target in (("cluster", citus_dsn), ("one node", dsn)):
        allow_backfill(target)
        with Deduper(target) as dd:
            list(dd.ingest_many(docs))
            dd.ingest_batch(marked, {"window_days": 1})
            dd.set_setting("noise_patterns", [*dd.options.noise_patterns, "【示例网】", "的"])
            assert _stored(dd) != _expected(dd)
            with pytest.raises(Interrupted):
                rb.refingerprint(dd.conn, options=dd.options, batch_size=100, progress=stop)
            result = rb.refingerprint(dd.conn, options=dd.options, batch_size=100)
            assert result.resumed
            names = dict(dd.conn.execute("SELECT doc_id, external_id FROM documents").fetchall())
            stored = _stored(dd)
            assert stored == _expected(dd)
            digests = sorted(
                (bytes(sha1), names.get(doc_id))
                for sha1, doc_id in dd.conn.execute(
                    "SELECT content_sha1, doc_id FROM document_digests"
                ).fetchall()
            )
            report = rb.rebuild(dd.conn, options=dd.options)
            names = dict(dd.conn.execute("SELECT doc_id, external_id FROM documents").fetchall())
            rows = dd.conn.execute(
                "SELECT external_id, layer, status, matched_doc_id FROM duplicate_candidates"
            ).fetchall()
            out[name] = (
                (result.done, result.changed, result.total),
                {names.get(d, d): v for d, v in stored.items()},
                digests,
                dict(report.duplicates),
                sorted((r[0], r[1], r[2], names.get(r[3])) for r in rows),
            )
    assert out["cluster"] == out["one node"]
    assert out["cluster"][3].get("exact") == len(marked)
    for m, d in zip(marked, docs, strict=False):
        assert (m["id"], "exact", "auto", d["id"]) in out["cluster"][4]


def test_a_single_node_database_moves_onto_the_cluster(citus_cluster, citus_dsn, dsn, sina):
    """DISTRIBUTION.md's steps for an operator: init --citus on the
    coordinator, the partitions of the days held, then the single node's data
    (pg_dump --data-only) loaded through the coordinator."""
    import subprocess

    import citus_cluster as cc

    docs = _stream(sina)
    with Deduper(dsn, batch_size=25) as dd:
        list(dd.ingest_many(docs[:50]))
        dd.set_setting("containment_threshold", 0.85)
        (lo, hi) = dd.conn.execute(
            "SELECT min(seen_at)::date, max(seen_at)::date FROM document_sightings"
        ).fetchone()
    bin_dir = citus_cluster.build.bin
    dump = subprocess.run(
        [str(bin_dir / "pg_dump"), "--data-only",
         "--exclude-table-data=alembic_version", "--exclude-table-data=dedup_lock_stripes",
         "--exclude-table-data=dedup_settings", "--exclude-table-data=dedup_settings_history",
         "-d", dsn],
        env=cc.build_env(), check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    with psycopg.connect(dsn) as conn:
        settings = conn.execute("SELECT name, value FROM dedup_settings").fetchall()
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        conn.execute("SELECT dedup_ensure_partitions(%s, %s)", [lo, hi])
        for name, value in settings:
            conn.execute(
                "UPDATE dedup_settings SET value = %s WHERE name = %s AND value <> %s",
                [Jsonb(value), name, Jsonb(value)],
            )
    loaded = subprocess.run(
        [str(bin_dir / "psql"), "-v", "ON_ERROR_STOP=1", "-q", "-d", citus_dsn],
        # the coordinator's own tables have triggers (audit, template versions)
        # that must not fire on a load; the distributed tables have none
        input="SET session_replication_role = replica;\n" + dump,
        env=cc.build_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr
    counts = (
        "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM document_clauses),"
        " (SELECT count(*) FROM duplicate_candidates), (SELECT count(*) FROM document_sightings),"
        " (SELECT count(*) FROM document_digests), (SELECT max(doc_id) FROM documents)"
    )
    with psycopg.connect(dsn) as a, psycopg.connect(citus_dsn) as b:
        assert a.execute(counts).fetchone() == b.execute(counts).fetchone()
    # the rest of the stream: the same verdicts on both, new doc_ids after the old
    assert _verdicts(citus_dsn, docs[50:]) == _verdicts(dsn, docs[50:])
    with psycopg.connect(citus_dsn) as conn:
        assert conn.execute("SELECT count(DISTINCT doc_id) = count(*) FROM documents").fetchone()[0]


def test_the_review_pages_fact_check_runs_on_the_cluster(citus_dsn, dsn, sina):
    """The review page's fact check query (review_fact_check: SQL's
    dedup_facts_verdict on a candidate's pair) plans on the cluster and
    answers as on one node: a copy with one figure changed is a review of the
    fact check ('differ'), an added banner a duplicate whose facts agree."""
    body = next(
        a["body"]
        for a in sina
        if 300 < len(a["body"]) < 900 and "2018" in a["body"] and "8102" not in a["body"]
    )
    stream = [
        {"id": "a", "title": None, "body": body},
        {"id": "figure", "title": None, "body": body.replace("2018", "8102")},
        {"id": "banner", "title": None, "body": body + "\n广告：本店新品上市，欢迎各位读者选购。"},
    ]
    answers = []
    for target in (dsn, citus_dsn):
        with Deduper(target) as dd:
            verdicts = {v.id: (v.verdict, v.candidate_id) for v in dd.ingest_many(stream)}
            rows = {}
            for name in ("figure", "banner"):
                # the page's two reads: the candidate, then its matched document
                cur = dd.conn.execute(queries()["review_candidate"], {"id": verdicts[name][1]})
                c = dict(zip([x.name for x in cur.description], cur.fetchone(), strict=True))
                cur = dd.conn.execute(
                    queries()["review_matched_document"],
                    {"doc_id": c["matched_doc_id"], "seen_at": c["matched_seen_at"]},
                )
                c |= dict(zip([x.name for x in cur.description], cur.fetchone(), strict=True))
                c["body"] = c["body"] if c["body"] is not None else c["matched_body"]
                cur = dd.conn.execute(
                    queries()["review_fact_check"],
                    {
                        "source": c["source"],
                        "thresholds": json.dumps(c["thresholds"]),
                        "clauses": list(c["clauses"]),
                        "own": c["doc_id"],
                        "matched": c["matched_doc_id"],
                        "matched_seen_at": c["matched_seen_at"],
                        "facts": list(c["facts"]),
                        "matched_facts": list(c["matched_facts"]),
                        "body": c["body"],
                        "matched_body": c["matched_body"],
                        "matched_clause_count": c["matched_clause_count"],
                    },
                )
                check = dict(zip([x.name for x in cur.description], cur.fetchone(), strict=True))
                rows[name] = (verdicts[name][0], c["layer"], check["verdict"])
            answers.append(rows)
    assert answers[0] == answers[1], answers
    assert answers[0]["figure"][0] == "review" and answers[0]["figure"][2] == "differ", answers
    assert answers[0]["banner"][0] == "duplicate" and answers[0]["banner"][2] is None, answers


def test_the_review_page_works_on_the_cluster(citus_dsn, sina):
    """The review page (a real server process) on a distributed database: the
    queue and its counts, a candidate's page with both texts (the candidate and
    its matched document are distributed apart), a decision and its undo."""
    from review_support import check_layer_counts, login, queue_ids, seed, serving, status

    ids = seed(citus_dsn, sina)
    assert check_layer_counts(citus_dsn) >= 9 * 2
    with serving(citus_dsn) as url:
        client, csrf = login(url, "alice")
        auto = client.get("/review/api/queue", params={"status": "auto"})
        assert auto.status_code == 200, auto.text
        assert [r["candidate_id"] for r in auto.json()["items"]] == queue_ids(citus_dsn, "auto")
        assert auto.json()["pending"] == 1
        cid = ids["hostile-copy"]
        one = client.get(f"/review/api/candidates/{cid}")
        assert one.status_code == 200, one.text
        data = one.json()
        with psycopg.connect(citus_dsn) as conn:
            matched_body = conn.execute(
                "SELECT d.body FROM documents d WHERE d.external_id = 'sina-original'"
            ).fetchone()[0]
        assert data["candidate"]["matched_body"] == matched_body
        assert data["candidate"]["matched_external_id"] == "sina-original"
        page = client.get(f"/review/{cid}")
        assert page.status_code == 200, page.text[:500]
        assert '<b onmouseover="window.__pwned=4">' not in page.text  # escaped
        j = {"accept": "application/json"}
        pending = ids["demo-11-followup"]
        r = client.post(
            f"/review/{pending}/confirm", data={"csrf": csrf, "expected": "pending"}, headers=j
        )
        assert r.json()["outcome"] == "applied", r.text
        assert status(citus_dsn, pending)[:2] == ("confirmed", None)
        u = client.post("/review/undo", data={"csrf": csrf}, headers=j)
        assert u.json()["outcome"] == "undone", u.text
        assert status(citus_dsn, pending)[0] == "pending"
        # and the psql-side verb that reads both texts
        shown = CliRunner().invoke(cli, ["review", "show", str(cid), "--dsn", citus_dsn])
        assert shown.exit_code == 0, shown.output
        assert "--- matched: sina-original" in shown.output and matched_body in shown.output


def test_stats_review_list_and_template_learning_on_the_cluster(citus_dsn, dsn, sina):
    """What analysts and reviewers run besides the page: ``dedup-pg stats`` (table,
    JSON, Prometheus), ``review list`` and the template learner (``templates
    learn`` / ``list``, then a templated page fingerprints as its article), each
    on the cluster and on one node with the same input, same answers."""
    from review_support import seed

    nav, footer = "首页 | 新闻 | 体育 | 娱乐 | 财经 | 科技", "Copyright © 2018 某某网 版权所有"
    pages = [
        {"id": f"t{i}", "body": f"{nav}\n{a['body']}\n{footer}", "source": "site.cn"}
        for i, a in enumerate(sina[100:115])
    ]
    outputs = {}
    for name, target in (("cluster", citus_dsn), ("node", dsn)):
        seed(target, sina)
        with Deduper(target) as dd:
            assert all(v.verdict == "new" for v in dd.ingest_many(pages))
        runner = CliRunner()
        got = {}
        for args in (
            ["stats", "--format", "json"],
            ["stats", "--format", "prometheus"],
            ["stats"],
            ["review", "list", "--format", "json"],
            ["templates", "learn", "--min-docs", "5"],
            ["templates", "list", "--format", "json"],
        ):
            result = runner.invoke(cli, [*args, "--dsn", target])
            assert result.exit_code == 0, (name, args, result.output)
            got[" ".join(args)] = result.output
        with Deduper(target) as dd:
            bare = dd.ingest({"id": "bare", "body": sina[120]["body"], "source": "feed"})
            page = dd.ingest(
                {"id": "page", "body": f"{nav}\n{sina[120]['body']}\n{footer}", "source": "site.cn"}
            )
        got["verdicts"] = (bare.verdict, page.verdict, page.layer, page.matched_id)
        outputs[name] = got
    cluster, node = outputs["cluster"], outputs["node"]
    assert cluster["verdicts"] == node["verdicts"] == ("new", "duplicate", "exact", "bare")
    stats = json.loads(cluster["stats --format json"])
    assert stats == json.loads(node["stats --format json"])
    assert stats["totals"]["pending_review"] == 1 and stats["daily"]
    assert cluster["stats --format prometheus"] == node["stats --format prometheus"]
    assert cluster["stats"] == node["stats"]

    def without_ids(rows: str) -> list[dict]:
        keep = ("layer", "score", "source", "external_id", "title", "matched_title")
        return [{k: r[k] for k in keep} for r in json.loads(rows)]

    listed = without_ids(cluster["review list --format json"])
    assert listed == without_ids(node["review list --format json"]) and len(listed) == 1
    assert cluster["templates learn --min-docs 5"] == node["templates learn --min-docs 5"]
    assert "site.cn" in cluster["templates learn --min-docs 5"]
    patterns = json.loads(cluster["templates list --format json"])
    assert {p["text"] for p in patterns} == {nav, footer}, patterns
    assert [p["text"] for p in patterns] == [
        p["text"] for p in json.loads(node["templates list --format json"])
    ]


def _catalog_without_shards(dsn: str) -> list[str]:
    """The schema's catalog (schema.catalog) less the shard placements a
    coordinator holds (reference tables' shards, named ``<table>_<shard id>``)."""
    import re

    from dedup_pg import schema

    with psycopg.connect(dsn) as conn:
        return [line for line in schema.catalog(conn) if not re.search(r"_\d{6,}\b", line)]


def test_a_cluster_database_is_upgraded_through_the_revisions(citus_cluster, citus_dsn, sina):
    """A Citus database at an older revision (one at the head, with documents,
    taken down through the revisions' downgrades) is upgraded by migrate(): the
    revisions, then the Citus form of every object sql/citus/ redefines, in one
    transaction. Then its catalog is a new cluster database's, and ingest and the
    review page's counts run on it."""
    from review_support import check_layer_counts, seed

    start = "0022"  # 0021 rewrites rows a cluster refuses: a blocker (the test below)
    seed(citus_dsn, sina)
    database.downgrade(citus_dsn, start)
    assert database.current_revision(citus_dsn) == start
    # 0068's downgrade took its settings off every shard
    assert all(options == "" for _, options in _simhash_band_shard_options(citus_dsn))
    database.migrate(citus_dsn)
    assert database.current_revision(citus_dsn) == database.shipped_head()
    # the partitions seed() made before 0068 got its settings on every shard
    shards = _simhash_band_shard_options(citus_dsn)
    assert shards and all(options == VACUUMED_EVERY for _, options in shards), shards
    with psycopg.connect(citus_dsn) as conn:  # 0026 cut the values, 0049 the keys
        rows = conn.execute(
            "SELECT b.doc_id, dedup_minhash_values(b.signature), dedup_minhash_bands(b.signature)"
            " FROM document_minhash_bands b"
        ).fetchall()
        assert rows and all(keys == minhash.band_keys(values) for _, values, keys in rows)
        # each shard's GIN index finds a text by one of its keys
        for doc_id, _, keys in rows[:5]:
            found = conn.execute(
                "SELECT array_agg(b.doc_id) FROM document_minhash_bands b"
                " WHERE dedup_minhash_bands(b.signature) && %s::bigint[]",
                [keys[7:8]],
            ).fetchone()[0]
            assert doc_id in found
    name = "citus_fresh_upgrade"
    fresh = citus_cluster.create_database(name)
    try:
        database.create_schema(fresh, citus=True)
        allow_backfill(fresh)  # as seed() did
        upgraded, built = _catalog_without_shards(citus_dsn), _catalog_without_shards(fresh)
        assert upgraded == built, "\n".join(
            difflib.unified_diff(built, upgraded, "built", "upgraded", lineterm="", n=1)
        )
    finally:
        citus_cluster.drop_database(name)
    assert check_layer_counts(citus_dsn) >= 9 * 2
    with Deduper(citus_dsn) as dd:
        stored = dd.conn.execute(
            "SELECT title, body FROM documents WHERE external_id = 'sina-original'"
        ).fetchone()
        again = dd.ingest({"id": "again", "title": stored[0], "body": stored[1] + "\n（完）"})
    assert (again.verdict, again.matched_id) == ("duplicate", "sina-original")


def test_a_cluster_upgrade_through_a_revision_it_cannot_take_is_refused(citus_dsn):
    """Revision 0019 creates a table (it would be local, not distributed), and
    0021 rewrites rows by SQL of its Alembic script (refused by the cluster: "cannot
    insert multiple commands into a prepared statement"): a Citus database
    before them is refused, and left as it was."""
    from dedup_pg import schema
    from dedup_pg.database import DatabaseError

    assert schema.citus_upgrade_blockers(database.shipped_head()) == []
    assert schema.citus_upgrade_blockers("0021") == []
    assert schema.citus_upgrade_blockers("0018") == [
        "0019: table document_minhash_bands",
        "0021: SQL of its own in 0021_minhash_16_bands_of_3.py",
    ]
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0020'")
    with pytest.raises(DatabaseError, match="0021: SQL of its own"):
        database.migrate(citus_dsn)
    assert database.current_revision(citus_dsn) == "0020"
