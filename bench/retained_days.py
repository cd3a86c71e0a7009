"""What a check costs as days of history are kept (partitions never dropped).

dedup-pg keeps every day's documents in a day partition until ``dedup-pg
partitions drop`` removes it; a check only looks back ``window_days``.
dedup_ingest's statements run on generic plans, and a generic plan over a
partitioned table locks every partition it could read, each time it runs,
whatever run-time pruning then reads. This measures what that costs.

A fresh embedded server (its own settings, ``dedup_pg.database.server_settings``)
gets the first ``--stored`` sina2018 articles (seen now), then empty day
partitions of every per-day table back to each count of days kept in turn
(``--days``; the lookup tables' weeks with them), as ``dedup-pg`` makes them
when a day's first document arrives. At each count:

- single checks (the median of ``--rounds`` measurements, as for the batch:
  this machine's speed drifts): the installed ``dedup_ingest`` in dry run
  (server-side prepared, one text a call), for ``--calls`` new sina2018
  articles, under three configurations text by text (bench/growth.py's, in
  ``common.LAYER_RUNS``): every layer; MinHash off (override
  ``minhash_threshold`` null); exact + SimHash (the item without clauses,
  MinHash and the fact check off); p50 of each;
- a batch: the same texts in one dry-run call, ms per item;
- locks: how many a fresh connection holds after one dry-run batch of 100
  texts, 50 new and 50 reposts of stored ones (the first run of each
  statement plans it, and holds what planning opened), and whether
  ``--concurrent`` such batches at once succeed (each holds its locks until
  its transaction ends; PostgreSQL's lock table has
  ``max_locks_per_transaction`` x connections slots).

Run from the repository root:

    python bench/retained_days.py [--days 7,91,365,730] [--output PATH]

Results: ``bench/results/retained_days.md``.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
from common import (
    DATA,
    INGEST_SQL,
    LAYER_RUNS,
    ROOT,
    Report,
    cpu_model,
    engine_revision,
    layer_item,
    log,
    read_jsonl,
    scratch_dir,
)
from psycopg.types.json import Jsonb

from dedup_pg import Deduper, database
from dedup_pg.deduper import prepare_batch

RESULTS = ROOT / "bench" / "results" / "retained_days.md"
BATCH = "SELECT count(*) FROM dedup_ingest(%s::jsonb, true, '{}'::jsonb)"
#: every layer, MinHash off, exact + SimHash: bench/growth.py's configurations
#: but the radius-1 probe (a review distance of 4-7, not the default)
CONFIGS = LAYER_RUNS[:3]
MIXED = 100  # texts in the batch whose locks are counted
DAYS_KEPT = "SELECT count(*) FROM pg_inherits WHERE inhparent = 'documents'::regclass"


def keep_days(conn: psycopg.Connection, days: int) -> None:
    """Day partitions back to ``days`` days ago, 30 days a transaction (one
    transaction for all would itself run out of locks)."""
    today = datetime.now(timezone.utc).date()
    for start in range(0, days, 30):
        end = min(start + 29, days - 1)
        conn.execute(
            "SELECT dedup_ensure_partitions(%s, %s)",
            [today - timedelta(end), today - timedelta(start)],
        )


def single_checks(conn: psycopg.Connection, rows: list[dict]) -> dict[str, float]:
    """p50 ms of each configuration, interleaved text by text (warm-up first)."""
    runs = [
        (key, Jsonb(over), [layer_item(r, clauses) for r in rows])
        for key, _, over, clauses in CONFIGS
    ]
    for _, over, items in runs:
        for it in items[:5]:
            conn.execute(INGEST_SQL, [Jsonb([it]), over], prepare=True).fetchall()
    times: dict[str, list[float]] = {key: [] for key, _, _ in runs}
    for i in range(len(rows)):
        for key, over, items in runs:
            started = time.perf_counter()
            conn.execute(INGEST_SQL, [Jsonb([items[i]]), over], prepare=True).fetchall()
            times[key].append(time.perf_counter() - started)
    return {key: statistics.median(ts) * 1e3 for key, ts in times.items()}


def batch(rows: list[dict]) -> Jsonb:
    """Prepared rows as one dry-run call's items, in order."""
    return Jsonb([{**r, "pos": i} for i, r in enumerate(rows)])


def batch_ms(conn: psycopg.Connection, rows: list[dict]) -> float:
    payload = batch(rows)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        conn.execute(BATCH, [payload], prepare=True).fetchall()
        best = min(best, time.perf_counter() - started)
    return best * 1e3 / len(rows)


def locks_of_a_batch(dsn: str, items: list[dict]) -> int:
    with psycopg.connect(dsn) as conn, conn.transaction(force_rollback=True):
        conn.execute(BATCH, [batch(items)])
        return conn.execute(
            "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid()"
        ).fetchone()[0]


def concurrent_batches(dsn: str, items: list[dict], n: int) -> str:
    """n fresh connections run one dry-run batch each and hold their locks until
    all have run: 'ok', or the first error."""
    barrier = threading.Barrier(n)
    errors: list[str] = []

    def run() -> None:
        try:
            with psycopg.connect(dsn) as conn, conn.transaction(force_rollback=True):
                conn.execute(BATCH, [batch(items)])
                barrier.wait(timeout=120)
        except threading.BrokenBarrierError:
            pass
        except psycopg.Error as exc:
            errors.append(str(exc).splitlines()[0])
            barrier.abort()

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return "ok" if not errors else f"{len(errors)} of {n} failed: {errors[0]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--days", default="7,91,365,730", help="days kept, in increasing order")
    ap.add_argument("--stored", type=int, default=5000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--concurrent", type=int, default=4)
    ap.add_argument(
        "--rounds", type=int, default=3, help="measurements at each count (median reported)"
    )
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args()
    counts = [int(d) for d in args.days.split(",")]
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    stored = articles[: args.stored]
    fresh = articles[args.stored : args.stored + args.calls]
    home = scratch_dir("dedup-retained-")
    started = time.perf_counter()
    rows = []
    try:
        with Deduper(home=home) as dd:
            dsn = dd.conn.info.dsn
            list(dd.ingest_many([{k: a[k] for k in ("id", "title", "body")} for a in stored]))
            items = prepare_batch(
                [{k: a[k] for k in ("id", "title", "body")} for a in fresh], **dd._prepare_args()
            ).rows
            # a crawl batch: half new texts, half reposts of stored ones (a
            # source line added: found by containment, their documents read)
            reposts = [
                {"id": f"{a['id']}-repost", "title": a["title"], "body": a["body"] + "\n来源：转载"}
                for a in stored[: MIXED // 2]
            ]
            mixed = items[: MIXED // 2] + prepare_batch(reposts, **dd._prepare_args()).rows
            dd.conn.autocommit = True
            settings = {
                name: dd.conn.execute(f"SHOW {name}").fetchone()[0]
                for name in (
                    "max_locks_per_transaction",
                    "max_connections",
                    "shared_buffers",
                    "shared_memory_size",
                )
            }
            for days in counts:
                keep_days(dd.conn, days)
                kept = dd.conn.execute(DAYS_KEPT).fetchone()[0]
                log(f"{kept} day partitions of documents")
                # this machine's speed drifts by 10-30% from minute to minute:
                # the median of a few rounds
                rounds = [
                    (single_checks(dd.conn, items), batch_ms(dd.conn, items))
                    for _ in range(args.rounds)
                ]
                checks = {
                    key: statistics.median(r[0][key] for r in rounds) for key, _, _, _ in CONFIGS
                }
                per_item = statistics.median(r[1] for r in rounds)
                locks = locks_of_a_batch(dsn, mixed)
                together = concurrent_batches(dsn, mixed, args.concurrent)
                rows.append((kept, checks, per_item, locks, together))
                log(f"  {checks} batch {per_item:.3f} ms/item, locks {locks:,}, {together}")
    finally:
        database.stop_embedded(home)

    report = Report()
    report("# A check's cost as days of history are kept")
    report()
    report(
        f"`python bench/retained_days.py --days {args.days} --rounds {args.rounds}`, "
        f"engine {engine_revision()}, "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}, "
        f"{time.perf_counter() - started:.0f} s. A fresh embedded server "
        f"(max_locks_per_transaction {settings['max_locks_per_transaction']}, max_connections "
        f"{settings['max_connections']}, shared_buffers {settings['shared_buffers']}, shared "
        f"memory {settings['shared_memory_size']}); "
        f"{len(stored):,} sina2018 articles stored (seen now), then empty day partitions "
        f"back to each count of days kept; {len(items)} new sina2018 articles checked "
        "(dry-run `dedup_ingest`, server-side prepared); times are the median of the rounds. "
        "The window is 7 days (default)."
    )
    report()
    report(
        "| day partitions of documents | single check of a new text p50 (ms), "
        + " / ".join(label for _, label, _, _ in CONFIGS)
        + " | batch of new texts, "
        f"{len(items)}, ms per item | locks held after a batch of 50 new + 50 reposts (fresh "
        "connection) | "
        f"{args.concurrent} such batches at once |"
    )
    report("|---:|---|---:|---:|---|")
    for kept, checks, per_item, locks, together in rows:
        cells = " / ".join(f"{checks[key]:.3f}" for key, _, _, _ in CONFIGS)
        report(f"| {kept} | {cells} | {per_item:.3f} | {locks:,} | {together} |")
    report.write(args.output)
    log(f"written to {args.output}")


if __name__ == "__main__":
    main()
