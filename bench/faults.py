"""Faults, what the user sees, and what the database holds after: one table.

Each fault runs the real ``dedup-pg ingest`` (a subprocess, as a crawler's
cron job would) on real Sina articles plus reposts, against the embedded
server in a temporary home, and is compared with one clean run of the same
stream. Run from the repository root:

    python bench/faults.py [--articles 1500] [--reposts 500] [--out bench/results/faults.md]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
from common import DATA, Report, cpu_model, engine_revision, log, read_jsonl, scratch_dir

from dedup_pg import database
from dedup_pg.hostile import hostile_lines

CLI = [sys.executable, "-m", "dedup_pg.cli"]


def stream(articles: list[dict], reposts: int) -> list[bytes]:
    lines = [
        json.dumps(
            {"id": a["id"], "title": a["title"], "body": a["body"], "source": "sina"},
            ensure_ascii=False,
        ).encode()
        for a in articles
    ]
    for k in range(reposts):
        a = articles[(k * 7) % len(articles)]
        lines.append(
            json.dumps(
                {
                    "id": f"repost-{k}",
                    "title": a["title"],
                    "body": a["body"] + "\n(来源:转载自新浪网)",
                    "source": "other",
                },
                ensure_ascii=False,
            ).encode()
        )
    return lines


def state(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM document_sightings),"
            " (SELECT count(*) FROM duplicate_candidates), (SELECT count(*) FROM ingest_errors),"
            " (SELECT count(*) FROM dedup_partitions),"
            " (SELECT coalesce(sum(ingested), 0) FROM dedup_daily_stats)"
        ).fetchone()
    return dict(
        zip(
            ("documents", "sightings", "candidates", "errors", "partitions", "ingested"),
            row,
            strict=True,
        )
    )


class Run:
    """A database of its own on one embedded server, and the CLI against it."""

    def __init__(self, server_dsn: str, name: str) -> None:
        admin = psycopg.conninfo.make_conninfo(server_dsn, dbname="postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{database.EMBEDDED_DB}"')
        self.dsn = psycopg.conninfo.make_conninfo(server_dsn, dbname=name)

    def cli(self, *args: str, dsn: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*CLI, "ingest", *args, "--dsn", dsn or self.dsn, "--no-progress"],
            capture_output=True,
            text=True,
        )

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [*CLI, "ingest", *args, "--dsn", self.dsn, "--no-progress"], stderr=subprocess.PIPE
        )


def kill_after(proc: subprocess.Popen, out: Path, size: int) -> None:
    while not (out.exists() and out.stat().st_size > size):
        if proc.poll() is not None:
            raise RuntimeError(f"finished before the kill: {proc.stderr.read()!r}")
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def hold_stripes(dsn: str, seconds: float, ready: threading.Event) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT stripe FROM dedup_lock_stripes FOR UPDATE").fetchall()
        ready.set()
        time.sleep(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=1500)
    parser.add_argument("--reposts", type=int, default=500)
    parser.add_argument("--out", type=Path, default=Path("bench/results/faults.md"))
    args = parser.parse_args()
    report = Report()
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl", limit=args.articles)
    lines = stream(articles, args.reposts)
    tmp = scratch_dir("dedup-faults-")
    src = tmp / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    home = tmp / "home"
    server = database.start_embedded(home)
    database.migrate(server)
    rows: list[tuple[str, str, str]] = []

    def row(fault: str, sees: str, holds: str) -> None:
        log(f"{fault}: {sees} | {holds}")
        rows.append((fault, sees, holds))

    def held(s: dict[str, int]) -> str:
        return (
            f"{s['documents']:,} documents, {s['sightings']:,} sightings, "
            f"{s['candidates']:,} candidates, {s['errors']:,} ingest_errors"
        )

    n = len(lines)
    clean = Run(server, "clean")
    t0 = time.perf_counter()
    result = clean.cli(str(src), "--out", str(tmp / "clean.jsonl"))
    expected = state(clean.dsn)
    row(
        "none (one clean run)",
        f"exit {result.returncode}, {n:,} verdicts ({time.perf_counter() - t0:.1f} s)",
        held(expected),
    )

    # hostile lines, one after each of the first articles
    hostile = hostile_lines()
    mixed = tmp / "mixed.jsonl"
    body = []
    for i, line in enumerate(lines):
        body.append(line)
        if i < len(hostile):
            body.append(hostile[i][1])
    mixed.write_bytes(b"\n".join(body) + b"\n")
    run = Run(server, "hostile")
    result = run.cli(str(mixed), "--out", str(tmp / "hostile.jsonl"))
    verdicts = [json.loads(v) for v in (tmp / "hostile.jsonl").read_text().splitlines()]
    errors = sum(v["verdict"] == "error" for v in verdicts)
    s = state(run.dsn)
    kept = ("documents", "sightings", "candidates")
    same = "= clean run" if all(s[k] == expected[k] for k in kept) else "DIFFERS"
    row(
        f"{len(hostile)} kinds of hostile line among {n:,} good ones",
        f"exit {result.returncode}; {len(verdicts):,} verdicts for {len(body):,} lines, "
        f"{errors} `error` naming line and field",
        f"{held(s)} (documents, sightings, candidates {same}); {s['partitions']} partitions",
    )

    # a client killed with SIGKILL mid-stream, then the crawler starts again
    for how in ("from the top", "with --resume"):
        run = Run(server, "kill" + ("resume" if "resume" in how else "top"))
        out = tmp / f"kill-{how[-3:]}.jsonl"
        proc = run.popen(str(src), "--batch-size", "100", "--out", str(out))
        kill_after(proc, out, 150_000)
        written = len(out.read_bytes().splitlines())
        again = ["--out", str(out), "--resume"] if "resume" in how else []
        result = run.cli(str(src), "--batch-size", "100", *again)
        s = state(run.dsn)
        same = "= clean run" if s == expected else "DIFFERS from the clean run"
        row(
            f"client `kill -9` after {written:,} verdicts, re-run {how}",
            f"exit {result.returncode}; `--out` held {written:,} committed verdicts at the kill",
            f"{held(s)}: {same}",
        )

    # the postmaster killed mid-ingest: the client reconnects and goes on
    home2 = tmp / "home2"
    dsn2 = database.start_embedded(home2)
    database.migrate(dsn2)
    env = {k: v for k, v in os.environ.items() if k != "DEDUP_PG_DSN"}
    env["DEDUP_PG_HOME"] = str(home2)
    out = tmp / "postmaster.jsonl"
    proc = subprocess.Popen(
        [*CLI, "ingest", str(src), "--batch-size", "100", "--out", str(out), "--no-progress"],
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    while not (out.exists() and out.stat().st_size > 150_000):
        time.sleep(0.01)
    at = len(out.read_bytes().splitlines())
    os.kill(int((home2 / "pgdata" / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
    t0 = time.perf_counter()
    _, stderr = proc.communicate(timeout=600)
    s = state(database.start_embedded(home2))
    same = "= clean run" if s == expected else "DIFFERS from the clean run"
    reconnected = "reconnected" in stderr
    row(
        f"postmaster `kill -9` after {at:,} verdicts",
        f"exit {proc.returncode}; the client {'reconnected' if reconnected else 'did not reconnect'}"
        f" and finished ({len(out.read_bytes().splitlines()):,} verdicts, "
        f"{time.perf_counter() - t0:.1f} s after the kill)",
        f"{held(s)}: {same}",
    )
    database.stop_embedded(home2)

    # another writer holds every stripe; this one has lock_timeout=200ms
    for seconds, retries in ((8, 8), (30, 2)):
        run = Run(server, f"lock{seconds}")
        ready = threading.Event()
        holder = threading.Thread(target=hold_stripes, args=(run.dsn, seconds, ready))
        holder.start()
        ready.wait(10)
        impatient = psycopg.conninfo.make_conninfo(run.dsn, options="-c lock_timeout=200")
        t0 = time.perf_counter()
        result = run.cli(str(src), "--retries", str(retries), dsn=impatient)
        took = time.perf_counter() - t0
        holder.join()
        s = state(run.dsn)
        retried = result.stderr.count("transient database fault")
        sees = f"exit {result.returncode} after {took:.1f} s, {retried} retries logged"
        if result.returncode:
            sees += f"; last line: `{last_line(result.stderr)[:90]}`"
        row(
            f"`lock_timeout` 200 ms, another writer holds the stripes {seconds} s, "
            f"`--retries {retries}`",
            sees,
            held(s) + ("" if result.returncode else (": = clean run" if s == expected else "")),
        )

    # three writers on one stream (batches of 5 and 500, one on the reversed file)
    run = Run(server, "three")
    rev = tmp / "rev.jsonl"
    rev.write_bytes(b"\n".join(reversed(lines)) + b"\n")
    procs = [
        run.popen(str(f), "--batch-size", str(b)) for f, b in ((src, 5), (src, 500), (rev, 50))
    ]
    codes = [p.wait() for p in procs]
    s = state(run.dsn)
    row(
        "three writers at once (batches of 5 and 500, one reading backwards)",
        f"exits {codes}",
        f"{held(s)} (clean run: {expected['documents']:,} documents, "
        f"{expected['sightings']:,} sightings; which copy of a story arrives first, "
        "and so is kept, depends on the order)",
    )

    # absurd times
    run = Run(server, "times")
    times = tmp / "times.jsonl"
    stamps = ["0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z", -1e12, 3093527980800, 1e20]
    stamps += [f"{1800 + k}-06-01T00:00:00Z" for k in range(195)]
    times.write_text(
        "\n".join(
            json.dumps({"id": f"t{i}", "body": a["body"], "seen_at": t}, ensure_ascii=False)
            for i, (t, a) in enumerate(zip(stamps, articles, strict=False))
        )
        + "\n",
        encoding="utf-8",
    )
    before = state(run.dsn)["partitions"]
    result = run.cli(str(times))
    s = state(run.dsn)
    row(
        f"{len(stamps)} lines with absurd `seen_at` (years 1-9999, epochs in the wrong unit)",
        f"exit {result.returncode}; {s['errors']} `error` verdicts",
        f"{s['documents']} documents; partitions {before} -> {s['partitions']}",
    )

    report("# Faults: what the user sees, what the database holds")
    report()
    report(
        f"Engine {engine_revision()}; {cpu_model()}; `python bench/faults.py "
        f"--articles {args.articles} --reposts {args.reposts}` "
        f"({n:,} lines: {args.articles:,} sina2018 articles, {args.reposts:,} reposts)."
    )
    report()
    report("| fault | what the user sees | what the database holds after |")
    report("|---|---|---|")
    for fault, sees, holds in rows:
        report(f"| {fault} | {sees} | {holds} |")
    report.write(args.out)
    database.stop_embedded(home)


if __name__ == "__main__":
    main()
