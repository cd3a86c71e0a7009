"""The HTTP service as a crawler in another language sees it: a real server
process on loopback, a real HTTP client."""

import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import httpx
import psycopg
import pytest

from dedup_pg.service import create_app

from conftest import REPO, fresh_database

TEXT = "今天上午,示例市举行新闻发布会,通报了前三季度全市经济运行的主要情况和下一步工作安排。"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(dsn, *args, env=None):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dedup_pg.cli", "serve", "--dsn", dsn, "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode())
    raise RuntimeError("server did not start")


@pytest.fixture(scope="module")
def served(template_dsn):
    """(url, dsn) of one server for the module."""
    with fresh_database(template_dsn) as dsn:
        proc, url = _start(dsn, "--max-bytes", "200000", "--pool-size", "6")
        try:
            yield url, dsn
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(served):
    return served[0]


def test_ingest_check_and_fetch(server, sina):
    a = sina[0]
    docs = [
        {
            "id": "a",
            "title": a["title"],
            "body": a["body"],
            "source": "s1",
            "url": "https://s1.example/a",
        },
        {"id": "bad", "body": "  "},
        {"id": 7, "title": a["title"], "body": a["body"], "source": "s2"},
    ]
    r = httpx.post(f"{server}/v1/ingest", json={"documents": docs})
    assert r.status_code == 200
    verdicts = r.json()["verdicts"]
    assert [(v["id"], v["verdict"]) for v in verdicts] == [
        ("a", "new"),
        ("bad", "error"),
        ("7", "duplicate"),
    ]
    assert verdicts[2]["layer"] == "exact" and verdicts[2]["matched_id"] == "a"
    doc_id = verdicts[0]["doc_id"]
    check = httpx.post(f"{server}/v1/check", json={"body": a["body"], "title": a["title"]}).json()
    assert (check["verdict"], check["matched_doc_id"]) == ("duplicate", doc_id)
    doc = httpx.get(f"{server}/v1/documents/{doc_id}").json()
    assert (doc["external_id"], doc["title"], doc["sightings"]) == ("a", a["title"], 2)
    assert httpx.get(f"{server}/v1/documents/999999").status_code == 404
    metrics = httpx.get(f"{server}/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    assert (
        'dedup_pg_verdicts_total{layer="exact",source="s2",verdict="duplicate"} 1.0' in metrics.text
    )


def test_bad_requests_are_4xx(server):
    post = httpx.post
    assert (
        post(
            f"{server}/v1/check", content=b"{not json", headers={"content-type": "application/json"}
        ).status_code
        == 400
    )
    assert post(f"{server}/v1/check", json={"body": 5}).status_code == 422
    assert post(f"{server}/v1/ingest", json={"documents": []}).status_code == 422
    assert post(f"{server}/v1/ingest", json={"documents": "x"}).status_code == 422
    assert post(f"{server}/v1/ingest", json={"documents": [{}] * 1001}).status_code == 422
    assert post(f"{server}/v1/check", json={"body": "长" * 100_000}).status_code == 413
    # a chunked body without Content-Length is counted as it arrives
    chunks = (json.dumps({"body": "x" * 50_000}).encode() for _ in range(5))
    assert (
        post(
            f"{server}/v1/check", content=chunks, headers={"content-type": "application/json"}
        ).status_code
        == 413
    )
    assert httpx.get(f"{server}/v1/documents/abc").status_code == 422
    v = post(f"{server}/v1/check", json={"body": "a\u0000b"}).json()
    assert v["verdict"] == "error" and "NUL" in v["error"]
    v = post(
        f"{server}/v1/check", json={"body": TEXT, "seen_at": "4727-09-18T08:38:24+18:20"}
    ).json()
    assert v["verdict"] == "error" and "seen_at_future_hours" in v["error"]  # not a 500
    # found by schemathesis: PostgreSQL allows offsets only to ±15:59
    local = datetime.now(timezone(timedelta(hours=18, minutes=20))).isoformat()
    v = post(f"{server}/v1/check", json={"body": TEXT, "seen_at": local}).json()
    assert v["verdict"] == "new"


def test_thresholds_per_request(server, sina):
    a = sina[3]
    httpx.post(
        f"{server}/v1/ingest",
        json={"documents": [{"id": "t", "title": a["title"], "body": a["body"]}]},
    )
    copy = {"title": a["title"], "body": a["body"] + "(本文来自示例网,转载请注明出处。)"}
    assert httpx.post(f"{server}/v1/check", json=copy).json()["verdict"] == "duplicate"
    strict = {
        "simhash_distance": 0,
        "simhash_review_distance": 0,
        "containment_threshold": 1.01,
        "containment_review_threshold": 1.01,
        "minhash_threshold": 1.01,
        "minhash_review_threshold": 1.01,
    }
    assert (
        httpx.post(f"{server}/v1/check", json={**copy, "thresholds": strict}).json()["verdict"]
        == "new"
    )
    bad = httpx.post(
        f"{server}/v1/ingest", json={"documents": [copy], "thresholds": {"noise_patterns": []}}
    )
    assert bad.status_code == 422 and "cannot be overridden" in bad.text


def test_concurrent_requests_with_the_same_document_store_it_once(server, sina):
    a = sina[1]
    body = {"documents": [{"id": "same", "title": a["title"], "body": a["body"]}]}
    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(lambda _: httpx.post(f"{server}/v1/ingest", json=body, timeout=60), range(8))
        )
    verdicts = sorted(r.json()["verdicts"][0]["verdict"] for r in results)
    assert verdicts == ["duplicate"] * 7 + ["new"]


def test_bearer_token(template_dsn):
    with fresh_database(template_dsn) as dsn:
        proc, url = _start(dsn, env={"DEDUP_PG_API_TOKEN": "s3cret"})
        try:
            assert httpx.post(f"{url}/v1/check", json={"body": TEXT}).status_code == 401
            wrong = httpx.post(
                f"{url}/v1/check", json={"body": TEXT}, headers={"Authorization": "Bearer nope"}
            )
            assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
            ok = httpx.post(
                f"{url}/v1/check", json={"body": TEXT}, headers={"Authorization": "Bearer s3cret"}
            )
            assert ok.status_code == 200
            assert httpx.get(f"{url}/metrics").status_code == 401
            assert httpx.get(f"{url}/healthz").status_code == 200  # liveness stays open
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_schemathesis_finds_no_server_errors(server):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "run",
            f"{server}/openapi.json",
            "--checks",
            "not_a_server_error",
            "--max-examples",
            "25",
            "--seed",
            "1",
            "--request-timeout",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO / "tests",
        # lone surrogates in the bodies: Schemathesis alone never makes them
        env={**os.environ, "SCHEMATHESIS_HOOKS": str(REPO / "tests" / "schemathesis_hooks.py")},
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "passed" in result.stdout


LONE_SURROGATES = ("\ud800", "\udfff")


def _post_json(url, value):
    # json.dumps writes a lone surrogate as the escape "\ud800": valid JSON
    # (what a crawler in another language may send), though not valid UTF-8
    body = json.dumps(value, ensure_ascii=True).encode("ascii")
    return httpx.post(url, content=body, headers={"content-type": "application/json"})


@pytest.mark.parametrize("field", ["id", "source", "title", "body", "url"])
def test_lone_surrogates_are_user_input_not_server_errors(served, field):
    server, dsn = served
    count = "SELECT count(*) FROM ingest_errors"
    with psycopg.connect(dsn) as conn:
        before = conn.execute(count).fetchone()[0]
    for sur in LONE_SURROGATES:
        bad = {"id": f"sur-{field}", "body": TEXT, field: f"a{sur}b"}
        good = {"id": f"ok-{field}-{ord(sur):x}", "body": f"{TEXT}({field} {ord(sur):x})"}
        r = _post_json(f"{server}/v1/ingest", {"documents": [bad, good]})
        assert r.status_code == 200, r.text
        verdicts = r.json()["verdicts"]
        # the bad item is reported on its own (its id as sent, or escaped to be
        # storable); the other is stored
        ids = (bad["id"], bad["id"].encode("utf-8", "backslashreplace").decode("utf-8"))
        assert verdicts[0]["verdict"] == "error" and verdicts[0]["id"] in ids, verdicts[0]
        assert verdicts[1]["verdict"] in ("new", "duplicate"), verdicts[1]
        r = _post_json(f"{server}/v1/check", bad)
        assert r.status_code == 200, r.text
        assert r.json()["verdict"] == "error" and r.json()["id"] in ids, r.json()
        # a 422 that quotes the input
        r = _post_json(f"{server}/v1/check", {"body": TEXT, "thresholds": {f"x{sur}": 1}})
        assert r.status_code == 422, r.text
        assert f"x{sur}" in r.json()["detail"]
    with psycopg.connect(dsn) as conn:
        after = conn.execute(count).fetchone()[0]
    assert after - before == len(LONE_SURROGATES), "every rejected item is in ingest_errors"
    assert httpx.get(f"{server}/metrics").status_code == 200


def test_checked_in_openapi_schema_is_current():
    current = json.loads(json.dumps(create_app("postgresql://unused").openapi(), sort_keys=True))
    checked_in = json.loads((REPO / "docs" / "openapi.json").read_text(encoding="utf-8"))
    assert current == checked_in, "regenerate: dedup-pg serve --openapi > docs/openapi.json"


def test_pool_replaces_a_broken_connection_and_keeps_its_size(dsn):
    from dedup_pg.service import _Pool

    pool = _Pool(dsn, 2)
    try:
        first = pool._all[0]
        first.conn.close()
        with pool.deduper() as dd:
            assert dd is not first and dd.conn.execute("SELECT 1").fetchone() == (1,)
        assert len(pool._all) == 2 and first not in pool._all and dd in pool._all
    finally:
        pool.close()
    assert all(d.conn.closed for d in pool._all)
