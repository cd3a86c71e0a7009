"""Backend CPU of two engines side by side: a change's cost on the server, measured
where this machine's drift cannot hide it.

Two whole runs one after the other differ by 10-20% on a machine whose speed swings
within minutes, so a change worth a few percent of the backend's CPU cannot be seen
that way. Here both schemas live in one embedded server: database ``ab_a`` built by
engine A's schema files (a checkout given by ``--engine-a``, run in a subprocess) and
``ab_b`` by this checkout's. The same prepared batches (sina2018 articles, 200 a batch,
fingerprinted once by this checkout) go to both through ``dedup_ingest``, which goes
first alternating from batch to batch, and each database's backend CPU is read
around every call. Then one-text dry-run checks of other articles, the same
way, in runs of 100. Both engines must take the same items (``dedup_ingest``'s JSON),
so this compares changes to the SQL, not to fingerprinting. The items go as
``Deduper`` sends them (``_dump_items``: orjson's UTF-8 JSON).

CPU is the scheduler's count of the time each backend ran (``/proc/PID/schedstat``, in
ns). The machine's speed still moves within a run; run it several times and read the
median ratio.

Run from the repository root, with engine A checked out elsewhere, e.g.
``git worktree add /tmp/engA <rev>``:

    python bench/backend_ab.py --engine-a /tmp/engA [--docs 6000] [--runs 3]

Prints one JSON line a run (ms of backend CPU a stored document and a check, B over A,
and whether both gave the same verdicts).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from dedup_pg import Deduper, database
from dedup_pg.database import start_embedded, stop_embedded
from dedup_pg.deduper import _dump_items, prepare_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, backend_cpu  # noqa: E402

INGEST = (
    "SELECT pos, verdict, layer, matched_doc_id, score"
    " FROM dedup_ingest(%s::jsonb, false, '{}'::jsonb)"
)
CHECK = (
    "SELECT verdict, layer, matched_doc_id, score FROM dedup_ingest(%s::jsonb, true, '{}'::jsonb)"
)


def one_run(engine_a: Path, docs: int, checks: int) -> dict:
    home = tempfile.mkdtemp(prefix="backend_ab")
    try:
        dsn = start_embedded(home)
        dsns = {}
        with psycopg.connect(dsn, autocommit=True) as admin:
            for k in "ab":
                admin.execute(f"CREATE DATABASE ab_{k}")
                dsns[k] = psycopg.conninfo.make_conninfo(dsn, dbname=f"ab_{k}")
        database.create_schema(dsns["b"])
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from dedup_pg import database; database.create_schema(sys.argv[1])",
                dsns["a"],
            ],
            env={**os.environ, "PYTHONPATH": str(engine_a)},
            cwd=tempfile.gettempdir(),  # not this checkout: engine A's package
            check=True,
        )
        with Deduper(dsns["b"]) as dd:
            args = dd._prepare_args()
        lines = (DATA / "news" / "sina2018.jsonl").read_text(encoding="utf-8").splitlines()
        articles = [json.loads(line) for line in lines]
        conns = {k: psycopg.connect(dsns[k]) for k in "ab"}
        pids = {}
        for k, conn in conns.items():
            with conn.transaction():
                conn.execute("SELECT dedup_ensure_partitions(current_date - 8, current_date + 1)")
            pids[k] = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            conn.commit()

        cpu = {"a": 0.0, "b": 0.0}
        verdicts: dict[str, list] = {"a": [], "b": []}
        for i, start in enumerate(range(0, docs, 200)):
            batch = [
                {"id": a["id"], "title": a["title"], "body": a["body"]}
                for a in articles[start : min(start + 200, docs)]
            ]
            items = Jsonb(
                prepare_batch(batch, **args).rows, dumps=_dump_items
            )  # as Deduper sends it
            for k in "ab" if i % 2 == 0 else "ba":
                before = backend_cpu(pids[k])
                with conns[k].transaction():
                    rows = conns[k].execute(INGEST, [items], prepare=True).fetchall()
                cpu[k] += backend_cpu(pids[k]) - before
                verdicts[k] += [tuple(r[1:]) for r in rows]

        other = articles[docs::7][: checks // 2] * 2  # each checked twice
        rows = prepare_batch([{"title": a["title"], "body": a["body"]} for a in other], **args).rows
        one_texts = [Jsonb([{**r, "pos": 0}], dumps=_dump_items) for r in rows]
        check_cpu = {"a": 0.0, "b": 0.0}
        results: dict[str, list] = {"a": [], "b": []}
        for conn in conns.values():
            conn.autocommit = True  # no transaction is open: each batch's was committed
            for item in one_texts[:30]:  # plans cached, caches warm
                conn.execute(CHECK, [item], prepare=True).fetchall()
        for j in range(0, len(one_texts), 100):
            for k in "ab" if (j // 100) % 2 == 0 else "ba":
                before = backend_cpu(pids[k])
                for item in one_texts[j : j + 100]:
                    results[k].append(conns[k].execute(CHECK, [item], prepare=True).fetchall())
                check_cpu[k] += backend_cpu(pids[k]) - before
        for conn in conns.values():
            conn.close()
    finally:
        stop_embedded(home)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "ingest_backend_ms_a_document": {k: round(cpu[k] / docs * 1e3, 4) for k in "ab"},
        "ingest_ratio_b_over_a": round(cpu["b"] / cpu["a"], 4),
        "check_backend_ms": {k: round(check_cpu[k] / len(one_texts) * 1e3, 4) for k in "ab"},
        "check_ratio_b_over_a": round(check_cpu["b"] / check_cpu["a"], 4),
        "same_verdicts": verdicts["a"] == verdicts["b"],
        "same_check_results": results["a"] == results["b"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine-a", type=Path, required=True, help="a checkout of engine A")
    parser.add_argument("--docs", type=int, default=6000, help="sina2018 articles ingested")
    parser.add_argument("--checks", type=int, default=1200, help="one-text dry-run checks")
    parser.add_argument("--runs", type=int, default=1)
    opts = parser.parse_args()
    for _ in range(opts.runs):
        print(json.dumps(one_run(opts.engine_a.resolve(), opts.docs, opts.checks)), flush=True)


if __name__ == "__main__":
    main()
