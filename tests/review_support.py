"""What the review page's tests share: a database with candidates of every
kind (the bundled demo sample: automatic duplicates, a reordered repost and a
pending review; a real Sina article's copy whose text is hostile), a server
process on it, and a reviewer's login."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from importlib.resources import files

import httpx
import psycopg
from test_service import _start

from dedup_pg import Deduper

from conftest import allow_backfill

HOSTILE_BODY = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
HOSTILE_TITLE = "<script>window.__pwned=5</script>"


def seed(dsn: str, sina: list[dict]) -> dict[str, int]:
    """Ingest the demo sample and a hostile copy; candidate ids by external id."""
    allow_backfill(dsn)
    docs = [
        json.loads(line)
        for line in files("dedup_pg.data").joinpath("demo.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    now = datetime.now(timezone.utc).replace(microsecond=0)
    article = sina[3]
    original = {
        "id": "sina-original",
        "title": article["title"],
        "body": article["body"],
        "source": "sina",
        "url": "https://news.sina.example/original.html",
        "seen_at": now - timedelta(hours=3),
    }
    hostile = {
        "id": "hostile-copy",
        "title": HOSTILE_TITLE + article["title"],
        "body": article["body"] + "\n" + HOSTILE_BODY,
        "source": '<b onmouseover="window.__pwned=4">evil</b>',
        "url": "javascript:window.__pwned=3",
        "seen_at": now - timedelta(hours=2),
    }
    with Deduper(dsn) as dd:
        list(dd.ingest_many(docs))
        verdict = list(dd.ingest_many([original, hostile]))[1]
        assert verdict.verdict == "duplicate", verdict
        rows = dd.conn.execute(
            "SELECT external_id, candidate_id FROM duplicate_candidates"
        ).fetchall()
    return dict(rows)


def status(dsn: str, candidate_id: int) -> tuple:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT status, doc_id, decided_by, note FROM duplicate_candidates WHERE candidate_id = %s",
            [candidate_id],
        ).fetchone()


def login(url: str, name: str, token: str | None = None) -> tuple[httpx.Client, str]:
    """A client with a session cookie, and the session's CSRF token."""
    client = httpx.Client(base_url=url, timeout=30)
    page = client.get("/review/login")
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)
    form = {"nonce": nonce, "name": name, "next": "/review"}
    if token is not None:
        form["token"] = token
    r = client.post("/review/login", data=form)
    assert r.status_code == 303, r.text
    queue = client.get("/review")
    assert queue.status_code == 200
    csrf = re.search(r'<meta name="csrf-token" content="([^"]+)"', queue.text).group(1)
    return client, csrf


@contextmanager
def serving(dsn: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """The URL of a ``dedup-pg serve`` process on ``dsn``, stopped afterwards."""
    proc, url = _start(dsn, env=env)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def queue_ids(dsn: str, status: str) -> list[int]:
    """The candidate ids of one status in the queue's order for it (newest
    first: every status but pending), as SQL gives them."""
    with psycopg.connect(dsn) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT candidate_id FROM duplicate_candidates WHERE status = %s"
                " ORDER BY created_at DESC, candidate_id DESC",
                [status],
            )
        ]


LAYERS = ("exact", "simhash", "containment", "minhash", "semantic")


def check_layer_counts(dsn: str) -> int:
    """review_layer_counts against the candidates counted here, in Python,
    under each of the page's filters and with caps that bite; the number of
    cases checked."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT status, layer, source, score, (seen_at AT TIME ZONE 'UTC')::date AS day"
            " FROM duplicate_candidates"
        ).fetchall()
        assert rows
        scores = sorted(r[3] for r in rows)
        middle = scores[len(scores) // 2]
        some = rows[0]
        cases = [
            {},
            {"source": some[2]},
            {"min_score": middle},
            {"max_score": middle},
            {"min_score": middle, "max_score": middle},
            {"day": some[4]},
            {"day": some[4] - timedelta(days=400)},
            {"cap": 1},
            {"cap": 2, "source": some[2]},
        ]
        checked = 0
        for status in sorted({r[0] for r in rows}):
            for case in cases:
                f = {"source": None, "min_score": None, "max_score": None, "day": None} | case
                cap = f.pop("cap", 10_000)
                expected = {layer: 0 for layer in LAYERS}
                for r in rows:
                    if (
                        r[0] == status
                        and (f["source"] is None or r[2] == f["source"])
                        and (f["min_score"] is None or r[3] >= f["min_score"])
                        and (f["max_score"] is None or r[3] <= f["max_score"])
                        and (f["day"] is None or r[4] == f["day"])
                    ):
                        expected[r[1]] = min(expected[r[1]] + 1, cap)
                got = conn.execute(
                    "SELECT layer, n FROM review_layer_counts(%s, %s, %s, %s, %s, %s)",
                    [status, f["source"], f["min_score"], f["max_score"], f["day"], cap],
                ).fetchall()
                assert got == list(expected.items()), (status, case)
                checked += 1
        return checked
