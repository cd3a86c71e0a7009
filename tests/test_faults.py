"""Faults and hostile input, end to end: a stream survives any line, every
rejected item is kept, transient faults are retried, and a crash followed by a
re-run converges on the state of one clean run.

The crash tests run the real console script in a subprocess and kill it (or
the PostgreSQL postmaster) with SIGKILL, as an operator's OOM killer would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from dedup_pg import Deduper, database
from dedup_pg.cli import EXIT_ALL_INGESTED, EXIT_SOME_REJECTED, EXIT_STOPPED
from dedup_pg.hostile import hostile_lines

from conftest import fresh_database

CLI = [sys.executable, "-m", "dedup_pg.cli"]


def _line(article: dict, i: int, source: str = "sina") -> bytes:
    doc = {"id": article["id"], "title": article["title"], "body": article["body"]}
    return json.dumps({**doc, "source": source}, ensure_ascii=False).encode()


def _stream(sina: list[dict], n: int, reposts: int = 0) -> list[bytes]:
    """n real articles, then ``reposts`` of them under new ids with a source
    line added (near duplicates), in a fixed order."""
    lines = [_line(a, i) for i, a in enumerate(sina[:n])]
    for k in range(reposts):
        a = sina[(k * 7) % n]
        body = a["body"] + "\n(来源:转载自新浪网)"
        repost = {"id": f"repost-{k}", "title": a["title"], "body": body, "source": "other"}
        lines.append(json.dumps(repost, ensure_ascii=False).encode())
    return lines


def _state(dsn: str) -> dict[str, object]:
    """What a run leaves behind, in the terms a user reads it."""
    with psycopg.connect(dsn) as conn:

        def one(sql: str) -> object:
            return conn.execute(sql).fetchone()[0]

        return {
            "documents": one("SELECT count(*) FROM documents"),
            "ids": one("SELECT array_agg(external_id ORDER BY external_id) FROM documents"),
            "sightings": one("SELECT count(*) FROM document_sightings"),
            "candidates": one("SELECT count(*) FROM duplicate_candidates"),
            "digests": one("SELECT count(*) FROM document_digests"),
            "errors": one("SELECT count(*) FROM ingest_errors"),
            "stats": one(
                "SELECT array_agg(row(source, ingested, new, exact, simhash, containment,"
                " minhash, semantic, review, errors)::text ORDER BY source NULLS FIRST)"
                " FROM dedup_daily_stats"
            ),
        }


def _cli(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=env or os.environ.copy(), **kw
    )


# -- hostile lines -------------------------------------------------------------
def test_every_hostile_line_gets_one_error_verdict_naming_it_and_the_rest_are_ingested(
    dsn, sina, tmp_path
):
    hostile = hostile_lines()
    lines: list[bytes] = []
    kinds: list[str] = []
    for i, (kind, raw) in enumerate(hostile):
        lines += [_line(sina[i], i), raw]
        kinds += ["good", kind]
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    result = _cli("ingest", str(src), "--out", str(out), "--dsn", dsn, "--batch-size", "16")
    assert result.returncode == EXIT_SOME_REJECTED, result.stderr
    assert "Traceback" not in result.stderr
    verdicts = [json.loads(v) for v in out.read_text(encoding="utf-8").splitlines()]
    assert len(verdicts) == len(lines)  # one verdict per line, in order
    for lineno, (kind, v) in enumerate(zip(kinds, verdicts, strict=True), 1):
        if kind == "good":
            assert v["verdict"] in ("new", "review"), (lineno, v)  # kept
        else:
            assert v["verdict"] == "error", (kind, v)
            assert v["error"].startswith(f"line {lineno}: "), (kind, v["error"])
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT error, payload FROM ingest_errors ORDER BY error_id").fetchall()
        stored = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert stored == len(hostile)
    # every rejected line is kept, as the bytes that arrived
    assert [bytes(payload) for _, payload in rows] == [raw for _, raw in hostile]
    # the message names the field at fault
    by_kind = dict(zip([k for k in kinds if k != "good"], [e for e, _ in rows], strict=True))
    assert "source" in by_kind["lone surrogate '\\ud800' in source"]
    assert "id" in by_kind["lone surrogate in id"]
    assert "seen_at" in by_kind["seen_at NaN"] and "seen_at" in by_kind["seen_at 1e20"]
    assert "seen_at_future_hours" in by_kind["seen_at 3093527980800"]  # not silently 2068
    assert "seen_at_past_days" in by_kind['seen_at "0001-01-01T00:00:00Z"']
    assert "at most 1,024" in by_kind["20,000-character id"]


def test_absurd_times_create_no_partitions(dd):
    before = dd.conn.execute("SELECT count(*) FROM dedup_partitions").fetchone()[0]
    times = ["0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z", -1e12, 3093527980800, 1e20]
    times += [f"{1900 + k * 3}-06-01T00:00:00Z" for k in range(40)]
    docs = [
        {"id": f"t{i}", "body": f"第{i}篇正文,时间是错的。" * 5, "seen_at": t}
        for i, t in enumerate(times)
    ]
    verdicts = list(dd.ingest_many(docs))
    assert {v.verdict for v in verdicts} == {"error"}
    after = dd.conn.execute("SELECT count(*) FROM dedup_partitions").fetchone()[0]
    assert after == before
    assert dd.conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0] == len(times)


def test_the_seen_at_window_is_a_setting(dd):
    old = {"id": "backfill", "body": "一篇两个月前的旧闻,今天才补抓回来。" * 4}
    old["seen_at"] = time.time() - 60 * 86400
    assert dd.ingest(old).verdict == "error"
    dd.set_setting("seen_at_past_days", 90)
    assert dd.ingest({**old, "id": "backfill-2"}).verdict == "new"


# -- what PostgreSQL itself rejects --------------------------------------------
def test_an_item_postgresql_rejects_is_recorded_and_its_batch_is_split(dd, sina):
    # a real server-side rejection of one item that Python's checks let through
    dd.conn.execute(
        "ALTER TABLE documents ADD CONSTRAINT no_poison CHECK (external_id <> 'poison')"
    )
    docs = [{"id": a["id"], "title": a["title"], "body": a["body"]} for a in sina[:40]]
    docs[25] = {**docs[25], "id": "poison"}
    verdicts = list(dd.ingest_many(docs, batch_size=40))
    assert verdicts[25].verdict == "error" and "rejected by PostgreSQL" in verdicts[25].error
    assert "no_poison" in verdicts[25].error
    assert {v.verdict for i, v in enumerate(verdicts) if i != 25} <= {"new", "review"}
    row = dd.conn.execute("SELECT external_id, error, payload FROM ingest_errors").fetchone()
    assert row[0] == "poison" and "no_poison" in row[1]
    assert json.loads(bytes(row[2]))["body"] == sina[25]["body"]  # its bytes, nothing lost
    assert dd.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 39


# -- transient faults ----------------------------------------------------------
def _hold_stripes(dsn: str, seconds: float, ready: threading.Event) -> None:
    """Another writer's long transaction: every ingest stripe locked."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT stripe FROM dedup_lock_stripes FOR UPDATE").fetchall()
        ready.set()
        time.sleep(seconds)


def test_a_lock_timeout_is_retried_until_the_lock_is_free(dsn, sina, caplog):
    ready = threading.Event()
    holder = threading.Thread(target=_hold_stripes, args=(dsn, 1.5, ready))
    holder.start()
    ready.wait(10)
    impatient = psycopg.conninfo.make_conninfo(dsn, options="-c lock_timeout=200")
    docs = [{"id": a["id"], "body": a["body"]} for a in sina[:5]]
    with Deduper(impatient, migrate=False, retries=8) as dd:
        verdicts = list(dd.ingest_many(docs))
    holder.join()
    assert [v.verdict for v in verdicts] == ["new"] * 5
    assert "transient database fault" in caplog.text and "lock timeout" in caplog.text


def test_retries_exhausted_stop_the_cli_with_one_line_and_keep_committed_batches(
    dsn, sina, tmp_path
):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(_stream(sina, 6)) + b"\n")
    ready = threading.Event()
    holder = threading.Thread(target=_hold_stripes, args=(dsn, 8, ready))
    holder.start()
    ready.wait(10)
    impatient = psycopg.conninfo.make_conninfo(dsn, options="-c lock_timeout=100")
    out = tmp_path / "out.jsonl"
    result = _cli("ingest", str(src), "--dsn", impatient, "--retries", "1", "--out", str(out))
    holder.join()
    assert result.returncode == EXIT_STOPPED
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: stopped after 0 items:") and "lock timeout" in last
    assert out.read_text() == ""
    # once the other writer is gone, the same command goes through
    result = _cli("ingest", str(src), "--dsn", dsn, "--out", str(out))
    assert result.returncode == EXIT_ALL_INGESTED, result.stderr
    assert len(out.read_text().splitlines()) == 6


# -- crashes and re-runs -------------------------------------------------------
def _clean_run(template_dsn: str, src: Path, tmp_path: Path) -> dict[str, object]:
    with fresh_database(template_dsn) as clean:
        out = tmp_path / "clean.jsonl"
        result = _cli("ingest", str(src), "--dsn", clean, "--batch-size", "50", "--out", str(out))
        assert result.returncode == EXIT_ALL_INGESTED, result.stderr
        return _state(clean)


def _ingest_killed(args: list[str], out: Path, size: int) -> None:
    """Run ``dedup-pg ingest`` and SIGKILL it once ``out`` holds ``size`` bytes."""
    proc = subprocess.Popen([*CLI, "ingest", *args], stderr=subprocess.PIPE)
    _kill_when(proc, lambda: out.exists() and out.stat().st_size > size)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _processes_reading(src, wait: float) -> list[int]:
    """Pids of processes whose command line names ``src``, once none is left or
    ``wait`` seconds have passed."""
    import psutil

    deadline = time.monotonic() + wait
    while True:
        left = []
        for proc in psutil.process_iter(attrs=["pid", "cmdline"]):
            if str(src) in " ".join(proc.info["cmdline"] or ()):
                left.append(proc.info["pid"])
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


@pytest.mark.slow
def test_client_kill_9_then_rerun_converges_on_one_clean_run(template_dsn, dsn, sina, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(_stream(sina, 400, reposts=100)) + b"\n")
    expected = _clean_run(template_dsn, src, tmp_path)

    out = tmp_path / "out.jsonl"
    _ingest_killed([str(src), "--dsn", dsn, "--batch-size", "50", "--out", str(out)], out, 5_000)
    written = len(out.read_bytes().splitlines())
    assert 0 < written < 500
    # its fingerprinting workers (--workers auto: 2 here) end with it
    assert _processes_reading(src, wait=10) == []
    # every verdict in the file belongs to a committed batch
    with psycopg.connect(dsn) as conn:
        sighted = conn.execute("SELECT count(*) FROM document_sightings").fetchone()[0]
    assert written <= sighted

    # a crawler restarting from the top re-delivers what was committed: counted once
    result = _cli("ingest", str(src), "--dsn", dsn, "--batch-size", "50")
    assert result.returncode == EXIT_ALL_INGESTED, result.stderr
    assert _state(dsn) == expected


@pytest.mark.slow
def test_client_kill_9_then_resume_converges_and_the_verdict_file_is_whole(
    template_dsn, dsn, sina, tmp_path
):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(_stream(sina, 300, reposts=60)) + b"\n")
    expected = _clean_run(template_dsn, src, tmp_path)
    clean_verdicts = [
        {
            k: v
            for k, v in json.loads(line).items()
            if k not in ("doc_id", "matched_doc_id", "candidate_id")
        }
        for line in (tmp_path / "clean.jsonl").read_text().splitlines()
    ]
    out = tmp_path / "out.jsonl"
    args = [str(src), "--dsn", dsn, "--batch-size", "50", "--out", str(out)]
    _ingest_killed(args, out, 2_000)
    result = _cli("ingest", *args, "--resume")
    assert result.returncode == EXIT_ALL_INGESTED, result.stderr
    assert "resuming after" in result.stderr
    assert _state(dsn) == expected
    verdicts = [
        {
            k: v
            for k, v in json.loads(line).items()
            if k not in ("doc_id", "matched_doc_id", "candidate_id")
        }
        for line in out.read_text().splitlines()
    ]
    assert verdicts == clean_verdicts


@pytest.mark.slow
def test_postmaster_kill_9_mid_ingest_the_client_reconnects_and_finishes(
    template_dsn, sina, tmp_path
):
    home = tmp_path / "home"
    dsn = database.start_embedded(home)
    database.migrate(dsn)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(_stream(sina, 400, reposts=100)) + b"\n")
    expected = _clean_run(template_dsn, src, tmp_path)
    env = {**os.environ, "DEDUP_PG_HOME": str(home)}
    env.pop("DEDUP_PG_DSN", None)
    out = tmp_path / "out.jsonl"
    args = [*CLI, "ingest", str(src), "--batch-size", "50", "--out", str(out)]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, env=env, text=True)
    try:
        _kill_when(proc, lambda: out.exists() and out.stat().st_size > 5_000)
        postmaster = int((home / "pgdata" / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == EXIT_ALL_INGESTED, stderr
        assert "reconnected to the database" in stderr
        assert len(out.read_text().splitlines()) == 500
        assert _state(database.start_embedded(home)) == expected
    finally:
        if proc.poll() is None:
            proc.kill()
        database.stop_embedded(home)


@pytest.mark.slow
def test_three_writers_on_one_stream_store_one_runs_documents(template_dsn, dsn, sina, tmp_path):
    lines = _stream(sina, 300, reposts=60)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    rev = tmp_path / "rev.jsonl"
    rev.write_bytes(b"\n".join(reversed(lines)) + b"\n")
    expected = _clean_run(template_dsn, src, tmp_path)
    procs = [
        subprocess.Popen(
            [*CLI, "ingest", str(f), "--dsn", dsn, "--batch-size", str(b)], stderr=subprocess.PIPE
        )
        for f, b in ((src, 5), (src, 500), (rev, 50))
    ]
    for p in procs:
        assert p.wait(timeout=300) == EXIT_ALL_INGESTED, p.stderr.read()
    state = _state(dsn)
    assert state["documents"] == expected["documents"]
    # each item arrived three times and is counted once: one sighting an item
    assert state["sightings"] == expected["sightings"] == len(lines)
    ids = state["ids"]
    assert len(ids) == len(set(ids))
