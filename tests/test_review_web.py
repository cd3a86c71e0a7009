"""The review page over HTTP (no browser): login, the queue's filters and
keyset pages, the candidate page's escaping, decisions, undo, two reviewers,
CSRF and the token. A real server process on a real database."""

import json
import re
from datetime import datetime, timedelta
from importlib.resources import files

import httpx
import psycopg
import pytest
from review_support import (
    HOSTILE_BODY,
    HOSTILE_TITLE,
    check_layer_counts,
    login,
    queue_ids,
    seed,
    serving,
    status,
)

from dedup_pg import Deduper
from dedup_pg.fingerprint import fingerprint
from dedup_pg.normalize import NormalizeOptions

from conftest import fresh_database

TOKEN = "s3cret-review-token"


@pytest.fixture
def site(template_dsn, sina):
    """(url, dsn, candidate ids) of a fresh server on a fresh, seeded database."""
    with fresh_database(template_dsn) as dsn:
        ids = seed(dsn, sina)
        with serving(dsn) as url:
            yield url, dsn, ids


@pytest.fixture
def token_site(template_dsn, sina):
    with fresh_database(template_dsn) as dsn:
        ids = seed(dsn, sina)
        with serving(dsn, env={"DEDUP_PG_API_TOKEN": TOKEN}) as url:
            yield url, dsn, ids


def test_queue_needs_a_login_then_lists_and_counts(site):
    url, dsn, ids = site
    r = httpx.get(f"{url}/review")
    assert r.status_code == 303 and r.headers["location"].startswith("/review/login")
    client, _ = login(url, "alice")
    pending = client.get("/review")
    assert f'id="row-{ids["demo-11-followup"]}"' in pending.text
    auto = client.get("/review/api/queue", params={"status": "auto"}).json()
    listed = [r["candidate_id"] for r in auto["items"]]
    expected = queue_ids(dsn, "auto")
    with psycopg.connect(dsn) as conn:
        by_layer = dict(
            conn.execute(
                "SELECT layer, count(*) FROM duplicate_candidates WHERE status = 'auto' GROUP BY layer"
            ).fetchall()
        )
    assert listed == expected
    assert {k: v for k, v in auto["counts"].items() if v} == by_layer
    assert auto["pending"] == 1
    # filters: one layer, one source, a score range
    exact = client.get("/review/api/queue", params={"status": "auto", "layer": "exact"}).json()
    assert exact["items"] and {r["layer"] for r in exact["items"]} == {"exact"}
    src = client.get(
        "/review/api/queue", params={"status": "auto", "source": "example-d.cn"}
    ).json()
    assert {r["source"] for r in src["items"]} == {"example-d.cn"}
    none = client.get("/review/api/queue", params={"status": "auto", "min_score": "1.5"}).json()
    assert none["items"] == []
    day = client.get("/review/api/queue", params={"status": "auto", "day": "2000-01-01"}).json()
    assert day["items"] == [] and day["next"] is None


def test_layer_counts_under_every_filter(template_dsn, sina):
    """The page's counts (review_layer_counts): each layer of each status under
    each filter, with caps that bite, as counting the rows gives them."""
    with fresh_database(template_dsn) as dsn:
        seed(dsn, sina)
        assert check_layer_counts(dsn) >= 9 * 2


def test_keyset_pages_cover_the_queue_once(site):
    url, dsn, ids = site
    with psycopg.connect(dsn) as conn:
        # 130 more automatic duplicates, copies of one, some with equal created_at
        conn.execute(
            """
            INSERT INTO duplicate_candidates (seen_at, created_at, external_id, title, body, url, source,
                published_at, content_sha1, title_sha1, simhash, text_length, clauses, norm_version,
                matched_doc_id, matched_seen_at, layer, score, distance, thresholds, status, minhash, facts)
            SELECT c.seen_at, c.created_at - (g / 3) * interval '1 second', 'bulk-' || g, c.title, c.body, c.url,
                   c.source, c.published_at, c.content_sha1, c.title_sha1, c.simhash, c.text_length, c.clauses,
                   c.norm_version, c.matched_doc_id, c.matched_seen_at, c.layer, c.score, c.distance,
                   c.thresholds, 'auto', c.minhash, c.facts
              FROM duplicate_candidates c, generate_series(1, 130) g
             WHERE c.candidate_id = %s
            """,
            [ids["demo-09-repost-ad"]],
        )
        expected = [
            r[0]
            for r in conn.execute(
                "SELECT candidate_id FROM duplicate_candidates WHERE status = 'auto'"
                " ORDER BY created_at DESC, candidate_id DESC"
            )
        ]
    client, _ = login(url, "alice")
    seen, pages, cursor = [], [], None
    while True:
        params = {"status": "auto", **({"after": cursor} if cursor else {})}
        page = client.get("/review/api/queue", params=params).json()
        pages.append(page)
        seen += [r["candidate_id"] for r in page["items"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == expected and len(pages) == 3
    # back from the last page: the one before it
    back = client.get(
        "/review/api/queue", params={"status": "auto", "before": pages[2]["prev"]}
    ).json()
    assert [r["candidate_id"] for r in back["items"]] == [
        r["candidate_id"] for r in pages[1]["items"]
    ]
    # the HTML pager carries the same cursors
    html = client.get("/review", params={"status": "auto"}).text
    assert f"after={pages[0]['next']}" in html


def test_hostile_text_is_escaped_everywhere(site):
    url, dsn, ids = site
    client, _ = login(url, "alice")
    cid = ids["hostile-copy"]
    page = client.get(f"/review/{cid}", params={"status": "auto"})
    assert page.status_code == 200
    text = page.text
    assert (
        "<script>window" not in text and "<img src=x" not in text and "<b onmouseover" not in text
    )
    assert "&lt;script&gt;window.__pwned=5&lt;/script&gt;" in text  # the title, literally
    assert "&lt;img src=x onerror=" in text  # the body
    assert 'href="javascript:' not in text and "javascript:window.__pwned=3" in text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert page.headers["x-frame-options"] == "DENY"
    queue = client.get("/review", params={"status": "auto"}).text
    assert "<script>window" not in queue and "&lt;script&gt;" in queue
    data = client.get(f"/review/api/candidates/{cid}").json()
    assert data["candidate"]["title"].startswith(HOSTILE_TITLE)
    right = "".join(t for p in data["comparison"]["right"] for _, t in p["spans"])
    assert HOSTILE_BODY in right
    assert any(
        k == "insert" and HOSTILE_BODY in t
        for p in data["comparison"]["right"]
        for k, t in p["spans"]
    )


def test_decide_with_a_note_then_undo(site):
    url, dsn, ids = site
    client, csrf = login(url, "alice")
    cid = ids["demo-09-repost-ad"]
    r = client.post(
        f"/review/{cid}/restore",
        data={"csrf": csrf, "expected": "auto", "note": "its own page", "queue": "status=auto"},
    )
    assert r.status_code == 303
    nxt = r.headers["location"]
    assert re.match(r"/review/\d+\?status=auto&done=\d+$", nxt)
    assert status(dsn, cid)[0] == "restored" and status(dsn, cid)[2:] == ("alice", "its own page")
    done = client.get(nxt).text
    assert f"Candidate {cid}: restored (was auto)" in done and "Press u to undo" in done
    # again with the status it had: nothing applied twice
    again = client.post(
        f"/review/{cid}/restore",
        data={"csrf": csrf, "expected": "auto"},
        headers={"accept": "application/json"},
    )
    assert again.status_code == 409 and again.json()["outcome"] == "already"
    # undo: automatic duplicate again, its document gone
    doc = status(dsn, cid)[1]
    u = client.post("/review/undo", data={"csrf": csrf}, headers={"accept": "application/json"})
    assert u.json()["outcome"] == "undone" and u.json()["candidate_id"] == cid
    assert status(dsn, cid) == ("auto", None, None, None)
    with psycopg.connect(dsn) as conn:
        assert (
            conn.execute("SELECT count(*) FROM documents WHERE doc_id = %s", [doc]).fetchone()[0]
            == 0
        )
        assert (
            conn.execute(
                "SELECT count(*) FROM dedup_whitelist WHERE candidate_id = %s", [cid]
            ).fetchone()[0]
            == 0
        )
    # nothing more of alice's to undo
    assert (
        client.post(
            "/review/undo", data={"csrf": csrf}, headers={"accept": "application/json"}
        ).json()["outcome"]
        == "nothing"
    )


def test_undo_of_a_pending_review_and_of_a_changed_decision(site):
    url, dsn, ids = site
    client, csrf = login(url, "alice")
    cid = ids["demo-11-followup"]
    j = {"accept": "application/json"}
    assert (
        client.post(
            f"/review/{cid}/confirm", data={"csrf": csrf, "expected": "pending"}, headers=j
        ).json()["outcome"]
        == "applied"
    )
    assert status(dsn, cid)[:2] == ("confirmed", None)
    client.post("/review/undo", data={"csrf": csrf}, headers=j)
    back = status(dsn, cid)
    assert back[0] == "pending" and back[1] is not None  # kept again, in the queue
    # dismiss, then change it to confirm; undo brings the dismissal back (with its note)
    client.post(
        f"/review/{cid}/dismiss",
        data={"csrf": csrf, "expected": "pending", "note": "new facts"},
        headers=j,
    )
    client.post(f"/review/{cid}/confirm", data={"csrf": csrf, "expected": "dismissed"}, headers=j)
    client.post("/review/undo", data={"csrf": csrf}, headers=j)
    assert status(dsn, cid)[0] == "dismissed" and status(dsn, cid)[2:] == ("alice", "new facts")
    with psycopg.connect(dsn) as conn:
        assert (
            conn.execute(
                "SELECT count(*) FROM dedup_whitelist WHERE candidate_id = %s", [cid]
            ).fetchone()[0]
            == 1
        )


def test_two_reviewers_one_candidate(site):
    url, dsn, ids = site
    alice, a_csrf = login(url, "alice")
    bob, b_csrf = login(url, "bob")
    cid = ids["demo-11-followup"]
    r1 = alice.post(
        f"/review/{cid}/dismiss", data={"csrf": a_csrf, "expected": "pending", "note": "follow-up"}
    )
    assert r1.status_code == 303
    r2 = bob.post(f"/review/{cid}/confirm", data={"csrf": b_csrf, "expected": "pending"})
    assert r2.status_code == 303 and r2.headers["location"] == f"/review/{cid}?already=dismissed"
    told = bob.get(r2.headers["location"]).text
    assert "Already decided by alice" in told and "Nothing was applied" in told
    assert status(dsn, cid)[0] == "dismissed"
    with psycopg.connect(dsn) as conn:
        assert (
            conn.execute(
                "SELECT count(*) FROM dedup_review_log WHERE candidate_id = %s", [cid]
            ).fetchone()[0]
            == 1
        )
    # bob cannot undo alice's decision: he has none
    assert (
        bob.post(
            "/review/undo", data={"csrf": b_csrf}, headers={"accept": "application/json"}
        ).json()["outcome"]
        == "nothing"
    )
    # alice's undo after bob changed it: superseded, bob's decision stands
    bob.post(f"/review/{cid}/confirm", data={"csrf": b_csrf, "expected": "dismissed"})
    u = alice.post("/review/undo", data={"csrf": a_csrf}, headers={"accept": "application/json"})
    assert u.status_code == 409 and u.json()["outcome"] == "superseded"
    assert status(dsn, cid)[:3] == ("confirmed", None, "bob")


def test_posts_without_the_csrf_token_are_refused(site):
    url, dsn, ids = site
    client, csrf = login(url, "alice")
    cid = ids["demo-09-repost-ad"]
    assert client.post(f"/review/{cid}/restore", data={"expected": "auto"}).status_code == 403
    assert (
        client.post(
            f"/review/{cid}/restore", data={"csrf": "forged", "expected": "auto"}
        ).status_code
        == 403
    )
    # the right token from another site's page
    evil = client.post(
        f"/review/{cid}/restore", data={"csrf": csrf}, headers={"origin": "https://evil.example"}
    )
    assert evil.status_code == 403
    assert client.post("/review/undo", data={}).status_code == 403
    assert client.post("/review/logout", data={}).status_code == 403
    # no session at all
    assert httpx.post(f"{url}/review/{cid}/restore", data={"csrf": csrf}).status_code == 401
    # a login form not from this site
    assert httpx.post(f"{url}/review/login", data={"name": "mallory"}).status_code == 403
    assert status(dsn, cid)[0] == "auto"
    # the header works as the field does (what a script with a session sends)
    ok = client.post(
        f"/review/{cid}/restore", headers={"x-csrf-token": csrf, "accept": "application/json"}
    )
    assert ok.status_code == 200 and ok.json()["outcome"] == "applied"


def test_the_token_guards_the_page(token_site):
    url, dsn, ids = token_site
    anonymous = httpx.Client(base_url=url)
    assert anonymous.get("/review").status_code == 303
    assert anonymous.get("/review/api/queue").status_code == 401
    form = anonymous.get("/review/login").text
    assert 'name="token"' in form
    nonce = re.search(r'name="nonce" value="([^"]+)"', form).group(1)
    wrong = anonymous.post(
        "/review/login", data={"nonce": nonce, "name": "alice", "token": "guess"}
    )
    assert wrong.status_code == 401 and "Wrong token" in wrong.text
    assert anonymous.get("/review").status_code == 303  # still out
    client, csrf = login(url, "alice", TOKEN)
    assert client.get("/review/api/queue").status_code == 200
    # scripts: the bearer token, no cookie and so no CSRF token needed
    bearer = {"authorization": f"Bearer {TOKEN}", "x-reviewer": "script"}
    cid = ids["demo-09-repost-ad"]
    r = httpx.post(f"{url}/review/{cid}/restore", data={"expected": "auto"}, headers=bearer)
    assert r.status_code == 200 and r.json()["outcome"] == "applied"
    assert status(dsn, cid)[2] == "script"
    bad = httpx.get(f"{url}/review/api/queue", headers={"authorization": "Bearer nope"})
    assert bad.status_code == 401


def test_bad_requests_are_told_not_crashed(site):
    url, dsn, ids = site
    client, csrf = login(url, "alice")
    for path, params, code in [
        ("/review", {"status": "bogus"}, 400),
        ("/review", {"layer": "nope"}, 400),
        ("/review", {"min_score": "abc"}, 400),
        ("/review", {"min_score": "nan"}, 400),
        ("/review", {"day": "yesterday"}, 400),
        ("/review", {"after": "garbage"}, 400),
        ("/review", {"after": "99999999999999999999.1"}, 400),
        ("/review/999999", {}, 404),
        ("/review/api/candidates/999999", {}, 404),
        ("/review/static/../../etc/passwd", {}, 404),
    ]:
        r = client.get(path, params=params)
        assert r.status_code == code, (path, params, r.status_code)
    j = {"accept": "application/json"}
    cid = ids["demo-11-followup"]
    assert client.post(f"/review/{cid}/explode", data={"csrf": csrf}).status_code == 404
    # a verb that does not fit: told why, nothing changed
    r = client.post(f"/review/{cid}/restore", data={"csrf": csrf, "expected": "pending"}, headers=j)
    assert r.status_code == 409 and "pending review" in r.json()["detail"]
    assert (
        client.post(
            f"/review/{cid}/confirm", data={"csrf": csrf, "note": "x" * 5000}, headers=j
        ).status_code
        == 400
    )
    assert status(dsn, cid)[0] == "pending"
    assert (
        client.get("/review/static/review.js").headers["content-type"].startswith("text/javascript")
    )


def test_the_fact_check_shown_is_the_sql_one(site):
    """The page asks SQL (dedup_facts_verdict, the rule ingest applies) why a
    pair's facts differ, and shows that reason: a next-round report of the
    demo's match report, one score changed (a short templated item whose
    numbers differ on both sides), goes to review through the fact check, and
    the page says so; a copy whose facts agree is shown as agreeing."""
    url, dsn, ids = site
    demo = {
        json.loads(line)["id"]: json.loads(line)
        for line in files("dedup_pg.data").joinpath("demo.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    }
    report = demo["demo-01"]
    assert "2比1" in report["body"]
    other = {
        "id": "demo-01-other-score",
        "title": report.get("title"),
        "body": report["body"].replace("2比1", "3比1", 1),
        # a day after the report, as the demo's own items are dated: with no
        # seen_at (now) the report left the 7-day window on 2026-12-05
        "seen_at": (datetime.fromisoformat(report["seen_at"]) + timedelta(days=1)).isoformat(),
    }
    with Deduper(dsn) as dd:
        v = dd.ingest_batch([other])[0]
        assert v.verdict == "review" and v.matched_id == "demo-01", v
        cid = dd.conn.execute(
            "SELECT candidate_id FROM duplicate_candidates WHERE external_id = %s", [other["id"]]
        ).fetchone()[0]
        (sql,) = dd.conn.execute(
            "SELECT dedup_facts_verdict(c.facts, d.facts, 0.15, 0.3, c.body, d.body, 0, 1, 1,"
            " dedup_effective_settings(NULL))"
            " FROM duplicate_candidates c JOIN documents d ON d.doc_id = c.matched_doc_id"
            " WHERE c.candidate_id = %s",
            [cid],
        ).fetchone()
    assert sql == "differ"
    client, _ = login(url, "alice")
    data = client.get(f"/review/api/candidates/{cid}").json()
    assert data["facts"]["verdict"] == "differ" and data["facts"]["disagree"] is True
    # SQL keeps keys; the page shows the facts each text holds alone, read again
    mine = fingerprint(other["body"], other["title"], NormalizeOptions()).facts
    theirs = fingerprint(report["body"], report.get("title"), NormalizeOptions()).facts
    assert data["facts"]["incoming_only"] == [f for f in mine if f not in theirs]
    assert data["facts"]["matched_only"] == [f for f in theirs if f not in mine]
    assert data["candidate"]["facts"] == list(mine) and all(isinstance(f, str) for f in mine)
    assert data["facts"]["incoming"] == len(mine) > 0
    page = client.get(f"/review/{cid}").text
    verdict = re.search(r'<b id="fact-verdict" data-verdict="([a-z]*)">([^<]*)</b>', page)
    assert verdict is not None, page
    assert verdict.group(1) == "differ"
    assert verdict.group(2).startswith("differ: two stories on one template")
    # a copy whose facts agree: the SQL's NULL, shown as agreement
    agree = client.get(f"/review/{ids['demo-09-repost-ad']}").text
    assert 'data-verdict="">agree' in agree
    # the exact layer is not fact-checked: nothing is claimed
    exact = client.get(f"/review/{ids['demo-05-repost-exact']}").text
    assert 'id="fact-verdict"' not in exact
