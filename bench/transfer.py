"""How to move a large batch into PostgreSQL: the JSON parameter of
``dedup_ingest`` against COPY into a staging table.

Measures, on real sina2018 articles fingerprinted as ingest does, the time per
document to get a 500-item batch into the server as rows: (1) one jsonb
parameter expanded with ``jsonb_populate_recordset`` (what ``dedup_ingest``
does), (2) ``COPY ... FROM STDIN`` into a temporary table (psycopg's row
writer), and, for scale, the fingerprinting itself. Prints a table and writes
``bench/results/transfer.md``.

    python bench/transfer.py [--batch 500] [--repeat 7]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import psycopg
from common import DATA, ROOT, Report, cpu_model, engine_revision, log, read_jsonl
from psycopg.types.json import Jsonb

from dedup_pg import database
from dedup_pg.deduper import prepare_batch
from dedup_pg.normalize import NormalizeOptions

COLUMNS = "pos, external_id, title, body, sha1, simhash, length, clauses"


def best_ms_per_doc(run, repeat: int, n: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return 1000 * min(times) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl", limit=args.batch)
    items = [{"id": a["id"], "title": a["title"], "body": a["body"]} for a in articles]
    prepared = prepare_batch(items, options=NormalizeOptions(), max_chars=1_000_000)
    rows = prepared.rows
    with tempfile.TemporaryDirectory() as home:
        dsn = database.start_embedded(home)
        try:
            database.migrate(dsn)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(
                    "CREATE TEMP TABLE staging (pos int, external_id text, title text, body text,"
                    " sha1 text, simhash bigint, length int, clauses bigint[])"
                )

                def json_param() -> None:
                    conn.execute(
                        "SELECT count(*) FROM jsonb_populate_recordset(NULL::dedup_item, %s)",
                        [Jsonb(rows)],
                    ).fetchone()

                def copy() -> None:
                    with conn.cursor().copy(f"COPY staging ({COLUMNS}) FROM STDIN") as cp:
                        for r in rows:
                            cp.write_row([r[c.strip()] for c in COLUMNS.split(",")])
                    conn.execute("TRUNCATE staging")

                json_ms = best_ms_per_doc(json_param, args.repeat, len(rows))
                copy_ms = best_ms_per_doc(copy, args.repeat, len(rows))
        finally:
            database.stop_embedded(home)
    prep_ms = 1000 * prepared.seconds / len(rows)
    log(f"json {json_ms:.3f} ms/doc, copy {copy_ms:.3f} ms/doc, fingerprint {prep_ms:.3f} ms/doc")
    report = Report()
    report("# Moving a batch into PostgreSQL: jsonb parameter vs COPY")
    report()
    report(
        f"`python bench/transfer.py --batch {args.batch} --repeat {args.repeat}`; "
        f"{engine_revision()}; CPU {cpu_model()}. Best of {args.repeat}, per document, "
        f"{len(rows)} fingerprinted sina2018 articles (avg "
        f"{sum(len(r['body']) for r in rows) / len(rows):,.0f} characters)."
    )
    report()
    report("| path | ms/doc |")
    report("|---|---:|")
    report(
        "| jsonb parameter, expanded by `jsonb_populate_recordset` (what `dedup_ingest` does) "
        f"| {json_ms:.3f} |"
    )
    report(f"| `COPY ... FROM STDIN` into a staging table (psycopg row writer) | {copy_ms:.3f} |")
    report(
        f"| for scale: fingerprinting one document (normalize, tokenize, hashes) | {prep_ms:.3f} |"
    )
    report.write(ROOT / "bench" / "results" / "transfer.md")


if __name__ == "__main__":
    main()
