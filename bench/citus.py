"""The same stream on one node and on a local Citus cluster: every verdict
compared, and what the cluster costs.

What it measures, and why
-------------------------
``dedup-pg init --citus`` distributes the schema (sql/citus/); its
``dedup_ingest`` differs from the single-node one only where Citus cannot plan
a statement. The promise is the same verdicts. This script feeds
``bench/quality.py``'s stream (seeded distinct sina2018 originals, template
hard negatives, then copies of seven kinds) in the same order and batches to

1. the embedded single-node server (as ``dedup-pg`` runs by default), and
2. a coordinator with two workers on 127.0.0.1 (tests/citus_cluster.py: Citus
   14.0.1 built from ../shared/vendor against the same PostgreSQL), durable
   (fsync and synchronous commit on, as the embedded server),

in the same run, and compares every verdict (verdict, layer, matched id,
score) item by item, not counts. It then times dry-run checks of single
items (``check_many`` of one item: one ``dedup_ingest`` call, nothing written)
on both: the check latency.

On one machine with two cores the three servers share those cores with the
client: this measures the cluster's overhead (a distributed plan per
statement, a connection per shard group, two-phase commit), not scale-out.

Run from the repository root:  python bench/citus.py [--originals N] [--copies N]
Writes bench/results/citus.md and prints it; exits 1 when a verdict differs.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from common import (
    DATA,
    ROOT,
    Report,
    allow_backfill,
    cpu_model,
    engine_revision,
    log,
    pct,
    read_jsonl,
)
from quality import (
    COPY_TYPES,
    MAKERS,
    TEMPLATE_SUFFIX,
    Clock,
    distinct_pool,
    make_lead_rewrite,
    wrap_in_template,
)

from dedup_pg import Deduper, database
from dedup_pg.deduper import DEFAULT_BATCH_SIZE

sys.path.insert(0, str(ROOT / "tests"))
import citus_cluster  # noqa: E402

out = Report()
RESULTS = ROOT / "bench" / "results" / "citus.md"


def stream(originals: int, negatives: int, copies: int, seed: int) -> list[tuple[str, list[dict]]]:
    """quality.py's groups, in its order: (group name, items)."""
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    pool, _ = distinct_pool(articles)
    rng = random.Random(seed)
    chosen = rng.sample(pool, originals + negatives)
    clock = Clock()
    groups: list[tuple[str, list[dict]]] = []
    by_id: dict[str, dict] = {}
    items = []
    for a in chosen[:originals]:
        item = {"id": a["id"], "title": a["title"], "body": a["body"], "source": "sina"}
        item["seen_at"] = clock()
        items.append(item)
        by_id[a["id"]] = item
    groups.append(("originals", items))
    groups.append(
        (
            "hard negatives",
            [
                {
                    "id": a["id"] + TEMPLATE_SUFFIX,
                    "title": a["title"],
                    "body": wrap_in_template(a),
                    "source": "huaxia",
                    "seen_at": clock(),
                }
                for a in chosen[originals:]
            ],
        )
    )
    for k, kind in enumerate(COPY_TYPES):
        trng = random.Random(f"{seed}:{kind}")
        sample = trng.sample(chosen[:originals], min(copies, originals))
        items = []
        for a in sample:
            if kind == "lead_rewrite":  # as quality.py: the new lead is another original's
                donor = trng.choice([d for d in chosen[:originals] if d["id"] != a["id"]])
                title, body = make_lead_rewrite(by_id[a["id"]], trng, donor)
            else:
                title, body = MAKERS[kind](by_id[a["id"]], trng)
            items.append(
                {
                    "id": f"{a['id']}~{kind}",
                    "title": title,
                    "body": body,
                    "source": f"repost-{k}",
                    "seen_at": clock(),
                }
            )
        groups.append((f"copy: {kind}", items))
    return groups


def key(v: object) -> tuple:
    return (v.id, v.verdict, v.layer, v.matched_id, v.score, v.distance)  # type: ignore[attr-defined]


def ingest(dsn: str | None, home: Path | None, groups: list) -> tuple[dict, list, list]:
    """Ingest every group; (seconds per group, verdicts, check latencies in ms)."""
    seconds: dict[str, float] = {}
    verdicts: list = []
    with Deduper(dsn, home=home, batch_size=DEFAULT_BATCH_SIZE) as dd:
        allow_backfill(dd)
        for name, items in groups:
            started = time.perf_counter()
            verdicts += list(dd.ingest_many(items))
            seconds[name] = time.perf_counter() - started
            log(f"  {name}: {len(items)} in {seconds[name]:.1f} s")
        # check latency: one dry-run call per item, copies and originals alike
        probe = [it for _, items in groups[2:] for it in items[:30]] + groups[0][1][:60]
        for item in probe[:20]:  # warm the connection's plans
            dd.check_many([item])
        latencies = []
        for item in probe:
            started = time.perf_counter()
            dd.check_many([item])
            latencies.append((time.perf_counter() - started) * 1000)
    return seconds, verdicts, latencies


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--originals", type=int, default=3000)
    ap.add_argument("--hard-negatives", type=int, default=500)
    ap.add_argument("--copies", type=int, default=300, help="copies per type")
    ap.add_argument("--seed", type=int, default=20181120)
    ap.add_argument("--shard-count", type=int, default=4, help="citus.shard_count at init")
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    groups = stream(args.originals, args.hard_negatives, args.copies, args.seed)
    total = sum(len(items) for _, items in groups)
    tmp = Path(tempfile.mkdtemp(prefix="dedup-citus-bench-"))
    tmp.chmod(0o755)  # the cluster's unprivileged user works in here
    try:
        log(f"single node: {total} items")
        one = ingest(None, tmp / "single", groups)
        database.stop_embedded(tmp / "single")
        build = citus_cluster.ensure_build()
        # the embedded server's settings, its shared_buffers split over the three nodes
        settings = database.server_settings()
        settings["shared_buffers"] = f"{int(settings['shared_buffers'][:-2]) // 3}MB"
        with citus_cluster.running_cluster(
            tmp / "cluster", build=build, durable=True, settings=settings
        ) as cluster:
            dsn = cluster.create_database("dedup")
            with database.connect(dsn, autocommit=True) as conn:
                conn.execute(f"ALTER DATABASE dedup SET citus.shard_count = {args.shard_count}")
            database.create_schema(dsn, citus=True)
            with database.connect(dsn, autocommit=True) as conn:
                (shards,) = conn.execute(
                    "SELECT count(*) FROM citus_shards WHERE table_name = 'documents'::regclass"
                ).fetchone()
                (version,) = conn.execute(
                    "SELECT extversion FROM pg_extension WHERE extname = 'citus'"
                ).fetchone()
            log(f"citus ({shards} shards a table, 2 workers): {total} items")
            two = ingest(dsn, None, groups)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    differ = [(a, b) for a, b in zip(one[1], two[1], strict=True) if key(a) != key(b)]
    out("# dedup-pg on a local Citus cluster: same verdicts, and the overhead")
    out()
    out(
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, `python bench/citus.py "
        f"--originals {args.originals} --copies {args.copies} --seed {args.seed} "
        f"--shard-count {args.shard_count}` (hard negatives {args.hard_negatives}), engine at "
        f"commit {engine_revision()}. Machine: {cpu_model()}, 2 cores shared by the client, "
        f"the coordinator and both workers (and other jobs): overhead, not scale-out."
    )
    out(
        f"Single node: the embedded PostgreSQL 18 (`dedup-pg`'s default). Cluster: Citus "
        f"{version}, a coordinator and 2 workers on 127.0.0.1, {shards} shards a distributed "
        f"table, fsync and synchronous commit on like the embedded server, its settings on every "
        f"node (shared_buffers split in three). Batches of {DEFAULT_BATCH_SIZE}, one writer."
    )
    out()
    out("## Verdicts")
    out()
    out(
        f"{total} items (built as bench/quality.py builds its stream: distinct originals, template hard negatives, "
        f"{args.copies} copies of each of {len(COPY_TYPES)} kinds): **{total - len(differ)} of "
        f"{total} verdicts identical** (verdict, layer, matched id, score, distance; item by item)."
    )
    for a, b in differ[:20]:
        out(f"- {a.id}: one node {key(a)[1:]}, Citus {key(b)[1:]}")
    counts: dict[str, int] = {}
    for v in one[1]:
        label = f"{v.verdict}/{v.layer}" if v.layer else v.verdict
        counts[label] = counts.get(label, 0) + 1
    out()
    out("Verdicts (both): " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) + ".")
    out()
    out("## Throughput and check latency")
    out()
    out("| | single node | Citus, 2 workers | Citus / single |")
    out("|---|---:|---:|---:|")
    for name, _ in groups:
        a, b = one[0][name], two[0][name]
        n = len(dict(groups)[name])
        out(f"| {name} ({n}), docs/s | {n / a:.0f} | {n / b:.0f} | {a / b:.2f} |")
    ta, tb = sum(one[0].values()), sum(two[0].values())
    out(
        f"| **all {total}, docs/s** | **{total / ta:.0f}** | **{total / tb:.0f}** | {ta / tb:.2f} |"
    )
    for q, label in ((0.5, "p50"), (0.95, "p95")):
        a, b = pct(one[2], q), pct(two[2], q)
        out(f"| check latency {label}, ms (1 item, dry run) | {a:.1f} | {b:.1f} | {b / a:.1f}x |")
    out()
    out(
        "Check latency: one `check_many` call of one item (one `dedup_ingest` call, dry run), "
        f"{len(one[2])} calls after the stream, measured at the client."
    )
    out.write(args.output)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
