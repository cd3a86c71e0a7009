"""What the term cache saves a crawler that runs ``dedup-pg ingest`` once a batch.

What is measured
----------------
A crawler hands dedup-pg a file of new items every few minutes: one
``dedup-pg ingest FILE --out OUT`` process a batch (default flags). A fresh
process computes every term's IDF, hash and name flag the first time it meets
it; the term cache (``DEDUP_PG_TERM_CACHE``, dedup_pg/term_cache.py) lets it
start from the terms earlier processes saw.

Into one fresh embedded server per mode (``dedup-pg init``, timed apart):
first an earlier crawl, ``--earlier`` (default 2,000) sina2018 articles that
are not in the batches, in one call; then ``--batches`` (default 6) calls of
``--batch`` (default 500) further articles each. Two modes, alternating for
``--rounds`` rounds (default 2):

``off``
    ``DEDUP_PG_TERM_CACHE=off``: every call starts with an empty table.
``cache``
    a cache folder of the mode's own, empty before the earlier crawl: the
    earlier crawl's call fills it, every batch call reads it and adds its
    batch's new terms at its end (that write is inside its time).

For each batch call: wall seconds and CPU seconds (user + system, from
``wait4``) of the ``dedup-pg`` process, the server's CPU apart. The verdict
files of the two modes are compared line by line (the cache must change no
verdict).

Then ``--checks`` (default 10) one-off ``dedup-pg check TEXT`` calls, each of
another article neither the earlier crawl nor the batches hold (a crawler
asking about one page): their wall and CPU seconds and peak RSS, and their
verdicts compared between the modes as well.

    python bench/term_cache.py [--earlier N] [--batches B] [--batch S] [--checks C] [--rounds R]

Results: ``bench/results/term_cache.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import DATA, ROOT, Report, engine_revision, log, read_jsonl
from peers import cli_server, postmaster_children_cpu, timed

RESULTS = ROOT / "bench" / "results" / "term_cache.md"
MODES = ("off", "cache")


def write_jsonl(path: Path, rows: list[dict]) -> str:
    with path.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return str(path)


def run_mode(
    mode: str, earlier: str, batches: list[str], checks: list[dict], work: Path, rnd: int
) -> tuple[list[dict[str, float]], list[dict[str, float]], list[str]]:
    home = work / f"home-{mode}-{rnd}"
    cache = "off" if mode == "off" else str(work / f"terms-{rnd}")
    calls, one_offs, verdicts = [], [], []
    with cli_server(home, cache) as (exe, env, _):
        out = work / f"earlier-{mode}-{rnd}.jsonl"
        timed([exe, "ingest", earlier, "--out", str(out), "--home", str(home)], env)
        for k, path in enumerate(batches):
            out = work / f"batch-{mode}-{rnd}-{k}.jsonl"
            before = postmaster_children_cpu(home)
            t = timed([exe, "ingest", path, "--out", str(out), "--home", str(home)], env)
            time.sleep(0.2)  # the backend exits after the client
            t["server_cpu"] = postmaster_children_cpu(home) - before
            calls.append(t)
            verdicts += out.read_text(encoding="utf-8").splitlines()
        for row in checks:
            cmd = [exe, "check", row["body"], "--title", row["title"], "--json"]
            one_offs.append(timed([*cmd, "--home", str(home)], env))
            answer = subprocess.run(
                [*cmd, "--home", str(home)], env=env, capture_output=True, text=True, check=True
            )
            verdicts.append(answer.stdout.strip())
    return calls, one_offs, verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--earlier", type=int, default=2000)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--checks", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args()
    started = time.perf_counter()
    need = args.batches * args.batch + args.earlier
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl", limit=need + args.checks)
    rows = [{"id": a["id"], "title": a["title"], "body": a["body"]} for a in articles]
    checks, rows = rows[need:], rows[:need]
    work = Path(tempfile.mkdtemp(prefix="dedup-term-cache-"))
    try:
        batched = rows[: args.batches * args.batch]
        earlier = write_jsonl(work / "earlier.jsonl", rows[args.batches * args.batch :])
        batches = [
            write_jsonl(work / f"batch-{k}.jsonl", batched[k * args.batch : (k + 1) * args.batch])
            for k in range(args.batches)
        ]
        results: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
        one_offs: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
        verdicts: dict[str, list[str]] = {}
        for rnd in range(args.rounds):
            for mode in MODES if rnd % 2 == 0 else MODES[::-1]:
                log(f"round {rnd + 1}: {mode}")
                calls, checked, lines = run_mode(mode, earlier, batches, checks, work, rnd)
                results[mode] += calls
                one_offs[mode] += checked
                if verdicts.setdefault(mode, lines) != lines:
                    raise SystemExit(f"{mode}: verdicts differ between rounds")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def strip(line: str) -> dict:
        v = json.loads(line)
        return {k: v.get(k) for k in ("id", "verdict", "layer", "matched_id", "score")}

    checked = f" and {args.checks} one-off checks" if args.checks else ""

    same = [strip(x) for x in verdicts["off"]] == [strip(x) for x in verdicts["cache"]]
    out = Report()
    out(
        f"# The term cache, one `dedup-pg ingest` a batch ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"
    )
    out("")
    out(
        f"`python bench/term_cache.py --earlier {args.earlier} --batches {args.batches} "
        f"--batch {args.batch} --checks {args.checks} --rounds {args.rounds}`, engine at "
        f"{engine_revision()}; "
        f"{time.perf_counter() - started:.0f} s; load average at the end "
        f"{os.getloadavg()[0]:.1f}. Each mode: a fresh server, an earlier crawl of "
        f"{args.earlier:,} sina2018 articles in one call, then {args.batches} calls of "
        f"{args.batch} other articles{checked}; medians over the "
        f"{args.rounds * args.batches} batch calls."
    )
    out("")
    out(
        "| mode | client CPU s a call | wall s a call | server CPU s a call | client CPU ms a document |"
    )
    out("|---|---:|---:|---:|---:|")
    med: dict[str, dict[str, float]] = {}
    for mode in MODES:
        calls = results[mode]
        med[mode] = {
            k: statistics.median(c[k] for c in calls) for k in ("cpu", "wall", "server_cpu")
        }
        m = med[mode]
        out(
            f"| {mode} | {m['cpu']:.2f} | {m['wall']:.2f} | {m['server_cpu']:.2f} | "
            f"{1000 * m['cpu'] / args.batch:.2f} |"
        )
    out("")
    out(
        f"Client CPU a call, cache / off: {med['cache']['cpu'] / med['off']['cpu']:.2f}x; "
        f"wall: {med['cache']['wall'] / med['off']['wall']:.2f}x. Verdicts of the calls "
        f"{'identical' if same else 'DIFFERENT'} in both modes "
        f"({len(verdicts['off']):,} lines)."
    )
    if args.checks:
        out("")
        out(
            f"One-off `dedup-pg check TEXT` ({args.checks} articles a round, each unseen), "
            "medians over every call:"
        )
        out("")
        out("| mode | CPU s a call | wall s a call | peak RSS MB |")
        out("|---|---:|---:|---:|")
        for mode in MODES:
            calls = one_offs[mode]
            m = {k: statistics.median(c[k] for c in calls) for k in ("cpu", "wall", "rss_mb")}
            out(f"| {mode} | {m['cpu']:.2f} | {m['wall']:.2f} | {m['rss_mb']:.0f} |")
    out.write(args.output)
    if not same:
        raise SystemExit("verdicts differ with the cache")


if __name__ == "__main__":
    main()
