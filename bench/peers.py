"""dedup-pg's default ingest against in-memory peers, same stream, same run.

What is measured
----------------
The stream: the first ``--articles`` (default 4,000) articles of
``../shared/data/news/sina2018.jsonl`` plus ``--reposts`` (default 1,000)
reposts of randomly chosen ones (fixed seed), each a copy with a source line
added (``来源：<outlet>`` before the body, or ``（来源：<outlet>）`` after it) and
placed at a random position after its original. It is written once, as JSONL,
to a temporary folder (never into the repository).

Each contender runs as its own process, reading that file, and its wall time,
CPU time (user + system) and peak RSS are taken from the operating system
(``os.wait4``). The contenders:

``dedup-pg``
    ``dedup-pg ingest FILE --out verdicts.jsonl`` with default flags and an
    empty term cache (a first run: ``DEDUP_PG_TERM_CACHE`` a new folder), into a
    fresh embedded server made beforehand by ``dedup-pg init --home H``
    (timed apart: it is the server's start, once per machine, not ingest).
    The server's CPU is counted too: the backend's user + system time, read
    from the postmaster's reaped-children counters (``/proc/PID/stat``)
    before and after. Everything is stored durably; five layers are checked.
``datasketch``
    ``MinHashLSH(threshold=0.5, num_perm=128)`` over ``MinHash(num_perm=128)``
    of the character 5-grams of title + body (UTF-8), in memory: query, and
    insert when the query finds nothing (as bench/semantic_quality.py runs it).
``rensa``
    rensa's ``RMinHashLSH`` (Rust) with ``RMinHash(num_perm=128)`` over the
    same 5-grams, in memory; an exact SHA-1 of the text first, and the LSH
    candidates verified (estimated Jaccard >= 0.5) before a duplicate is called.
``dedup-pg --workers 0``
    The same with fingerprinting in a thread of the ingest process (the
    default before ``--workers auto``), to check what the default picked.
``seeds``
    The obvious pipeline the project started from (it is not in the
    repository, so this is the plain version of it): NFKC + whitespace
    normalization, a SHA-1 set for exact copies, then pure-Python
    ``jieba.lcut`` tokens (punctuation and whitespace dropped) into the
    ``simhash`` package's ``Simhash`` (64 bits) and ``SimhashIndex(k=3)``:
    ``get_near_dups``, and ``add`` when there are none.

Rounds alternate the contenders (the order rotates every round), so a slow
spell of this shared machine falls on all of them; ratios are dedup-pg's
docs/s over the peer's in the same round, and their median is reported. A
contender's rate is documents / wall seconds of its whole process (Python's
start and imports included, for every contender alike); docs per CPU-second
counts every process's CPU (for dedup-pg, the server's too).

Each peer's duplicate count is printed (reposts flagged / originals flagged),
to show they did the work they were asked for.

    python bench/peers.py [--rounds R] [--articles N] [--reposts M] [--output PATH]

Needs the ``bench`` extra (``pip install 'pg-text-dedup[bench]'``: datasketch,
rensa, simhash, jieba). Results: ``bench/results/peers.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from common import DATA, ROOT, Report, engine_revision, log

RESULTS = ROOT / "bench" / "results" / "peers.md"
OUTLETS = [
    "新华网",
    "人民网",
    "中国新闻网",
    "央视新闻",
    "澎湃新闻",
    "环球网",
    "中国青年网",
    "光明网",
]
NUM_PERM = 128
SHINGLE = 5
THRESHOLD = 0.5


# -- the stream ------------------------------------------------------------------
def build_stream(articles: int, reposts: int, seed: int = 20) -> list[dict]:
    """``articles`` sina2018 articles, ``reposts`` copies with a source line."""
    rows: list[dict] = []
    with (DATA / "news" / "sina2018.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if len(rows) >= articles:
                break
            if line.strip():
                a = json.loads(line)
                rows.append({"id": a["id"], "title": a["title"], "body": a["body"]})
    rng = random.Random(seed)
    keyed = [(float(i), d) for i, d in enumerate(rows)]
    for j, i in enumerate(rng.sample(range(len(rows)), reposts)):
        a = rows[i]
        outlet = OUTLETS[j % len(OUTLETS)]
        body = (
            f"来源：{outlet}\n{a['body']}"
            if j % 2 == 0
            else f"{a['body'].rstrip()}\n（来源：{outlet}）"
        )
        doc = {"id": f"{a['id']}#repost", "title": a["title"], "body": body, "source": outlet}
        keyed.append((rng.uniform(i + 0.5, len(rows) + 0.5), doc))
    keyed.sort(key=lambda t: t[0])
    return [d for _, d in keyed]


def read_stream(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# -- the peers (each runs in its own process: ``peers.py --run NAME FILE``) ----------
def shingles(text: str) -> list[str]:
    return [text[j : j + SHINGLE] for j in range(max(1, len(text) - SHINGLE + 1))]


def run_datasketch(docs: list[dict]) -> list[bool]:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    dup = []
    for i, d in enumerate(docs):
        text = f"{d.get('title') or ''}\n{d['body']}"
        m = MinHash(num_perm=NUM_PERM)
        m.update_batch([s.encode("utf-8") for s in shingles(text)])
        found = bool(lsh.query(m))
        if not found:
            lsh.insert(i, m)
        dup.append(found)
    return dup


def run_rensa(docs: list[dict]) -> list[bool]:
    from rensa import RMinHash, RMinHashLSH

    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=32)
    exact: set[bytes] = set()
    kept: dict[int, RMinHash] = {}
    dup = []
    for i, d in enumerate(docs):
        text = f"{d.get('title') or ''}\n{d['body']}"
        digest = hashlib.sha1(text.encode("utf-8")).digest()
        if digest in exact:
            dup.append(True)
            continue
        m = RMinHash(num_perm=NUM_PERM, seed=42)
        m.update(shingles(text))
        found = any(kept[c].jaccard(m) >= THRESHOLD for c in lsh.query(m))
        if not found:
            lsh.insert(i, m)
            kept[i] = m
            exact.add(digest)
        dup.append(found)
    return dup


_SPACES = re.compile(r"\s+")


def run_seeds(docs: list[dict]) -> list[bool]:
    import logging

    import jieba
    from simhash import Simhash, SimhashIndex

    jieba.setLogLevel(logging.WARNING)
    logging.getLogger("simhash").setLevel(logging.ERROR)
    index = SimhashIndex([], f=64, k=3)
    exact: set[bytes] = set()
    dup = []
    for i, d in enumerate(docs):
        text = _SPACES.sub(
            " ", unicodedata.normalize("NFKC", f"{d.get('title') or ''}\n{d['body']}")
        ).strip()
        digest = hashlib.sha1(text.encode("utf-8")).digest()
        if digest in exact:
            dup.append(True)
            continue
        exact.add(digest)
        tokens = [t for t in jieba.lcut(text) if t.strip() and any(c.isalnum() for c in t)]
        sh = Simhash(tokens, f=64)
        found = bool(index.get_near_dups(sh))
        if not found:
            index.add(str(i), sh)
        dup.append(found)
    return dup


PEERS = {"datasketch": run_datasketch, "rensa": run_rensa, "seeds": run_seeds}
#: dedup-pg's contenders: its defaults, and fingerprinting in a thread (the
#: default before --workers auto), to show what the default chose
DEDUP_PG = {"dedup-pg": [], "dedup-pg --workers 0": ["--workers", "0"]}


def peer_main(name: str, path: str, out: str) -> None:
    flags = PEERS[name](read_stream(path))
    Path(out).write_text(json.dumps(flags), encoding="utf-8")


# -- timing whole processes --------------------------------------------------------
def timed(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``cmd``; wall s, CPU s (user + sys) and peak RSS (MB) from wait4."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0,):
        raise SystemExit(f"{cmd[:3]} exited {proc.returncode}: {err[-2000:]}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
    }


def postmaster_children_cpu(home: Path) -> float:
    """User + system seconds of the server processes the postmaster has reaped
    (the backends of finished connections), from /proc."""
    pid = int((home / "pgdata" / "postmaster.pid").read_text().split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # after the name: state is field 3; cutime, cstime are fields 16, 17
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def dedup_pg_bin() -> str:
    found = shutil.which("dedup-pg", path=os.path.dirname(sys.executable))
    return found or shutil.which("dedup-pg") or "dedup-pg"


@contextlib.contextmanager
def cli_server(home: Path, term_cache: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """A fresh embedded server in ``home`` for the ``dedup-pg`` command, as a
    user without settings gets it (no ``DEDUP_PG_*`` but ``DEDUP_PG_TERM_CACHE``
    = ``term_cache``): (the command, its environment, ``init``'s wall seconds);
    stopped and removed after."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEDUP_PG_")}
    env["DEDUP_PG_TERM_CACHE"] = term_cache
    exe = dedup_pg_bin()
    init = timed([exe, "init", "--home", str(home)], env)
    try:
        yield exe, env, init["wall"]
    finally:
        subprocess.run([exe, "stop", "--home", str(home)], env=env, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def run_dedup_pg(
    path: str, work: Path, rnd: int, extra: list[str]
) -> tuple[dict[str, float], list[bool], float]:
    home = work / f"home-{rnd}-{len(extra)}"
    out = work / f"verdicts-{rnd}-{len(extra)}.jsonl"
    # a first run on this machine: an empty term cache of its own (a cache
    # left by an earlier round holds this very stream's terms)
    with cli_server(home, str(work / f"terms-{rnd}-{len(extra)}")) as (exe, env, init):
        before = postmaster_children_cpu(home)
        t = timed([exe, "ingest", path, "--out", str(out), "--home", str(home), *extra], env)
        time.sleep(0.2)  # the backend exits after the client
        t["server_cpu"] = postmaster_children_cpu(home) - before
    flags = [json.loads(line)["verdict"] == "duplicate" for line in out.open(encoding="utf-8")]
    return t, flags, init


def run_peer(name: str, path: str, work: Path) -> tuple[dict[str, float], list[bool]]:
    out = work / f"{name}.json"
    t = timed([sys.executable, __file__, "--run", name, path, str(out)])
    t["server_cpu"] = 0.0
    return t, json.loads(out.read_text(encoding="utf-8"))


# -- report ----------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--articles", type=int, default=4000)
    ap.add_argument("--reposts", type=int, default=1000)
    ap.add_argument(
        "--only", default="dedup-pg,datasketch,rensa,seeds,dedup-pg --workers 0", help="contenders"
    )
    ap.add_argument("--output", type=Path, default=None, help=f"default {RESULTS.name}")
    ap.add_argument("--run", nargs=3, metavar=("PEER", "FILE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        peer_main(*args.run)
        return

    names = args.only.split(",")
    work = Path(tempfile.mkdtemp(prefix="dedup-pg-peers-"))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load0 = os.getloadavg()[0]
    try:
        docs = build_stream(args.articles, args.reposts)
        path = str(work / "stream.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for d in docs:
                fh.write(json.dumps(d, ensure_ascii=False) + "\n")
        is_repost = [d["id"].endswith("#repost") for d in docs]
        runs: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        flags: dict[str, list[bool]] = {}
        inits: list[float] = []
        for rnd in range(args.rounds):
            order = names[rnd % len(names) :] + names[: rnd % len(names)]
            for name in order:
                log(f"round {rnd + 1}: {name}")
                if name.startswith("dedup-pg"):
                    t, f, init = run_dedup_pg(path, work, rnd, DEDUP_PG[name])
                    inits.append(init)
                else:
                    t, f = run_peer(name, path, work)
                t["docs_s"] = len(docs) / t["wall"]
                t["docs_cpu_s"] = len(docs) / (t["cpu"] + t["server_cpu"])
                runs[name].append(t)
                flags[name] = f
                log(f"  {t['docs_s']:.0f} docs/s, {t['docs_cpu_s']:.0f} docs/CPU-s")
        load1 = os.getloadavg()[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rep = Report()
    rep(f"## dedup-pg against in-memory peers ({started})")
    rep()
    rep(
        f"`python bench/peers.py --rounds {args.rounds}`, engine at {engine_revision()}, "
        f"{os.cpu_count()} CPUs, load average (1 min) {load0:.2f} at the start, {load1:.2f} at the end. "
        f"Stream: {args.articles:,} sina2018 articles + {args.reposts:,} reposts with a source line "
        f"= {len(docs):,} documents; every contender a whole process, alternating, {args.rounds} rounds."
    )
    rep()
    rep(
        "| contender | docs/s (median) | min-max | docs per CPU-s (median) | CPU s | peak RSS MB "
        "| reposts flagged | originals flagged |"
    )
    rep("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        r = runs[name]
        f = flags[name]
        reposts = sum(x for x, p in zip(f, is_repost, strict=True) if p)
        originals = sum(x for x, p in zip(f, is_repost, strict=True) if not p)
        cpu = statistics.median(t["cpu"] + t["server_cpu"] for t in r)
        rep(
            f"| {name} | **{statistics.median(t['docs_s'] for t in r):.0f}** "
            f"| {min(t['docs_s'] for t in r):.0f}-{max(t['docs_s'] for t in r):.0f} "
            f"| {statistics.median(t['docs_cpu_s'] for t in r):.0f} | {cpu:.1f} "
            f"| {statistics.median(t['rss_mb'] for t in r):.0f} "
            f"| {reposts}/{sum(is_repost)} | {originals}/{len(f) - sum(is_repost)} |"
        )
    rep()
    if "dedup-pg" in names and inits:
        server = [t["server_cpu"] for t in runs["dedup-pg"]]
        rep(
            f"dedup-pg: `dedup-pg init` (server start, timed apart) {statistics.median(inits):.1f} s; "
            f"server CPU during ingest {statistics.median(server):.1f} s (in its CPU column)."
        )
        rep()
        rep("| dedup-pg over | docs/s ratio (median of rounds) | per round | per CPU-s ratio |")
        rep("|---|---:|---:|---:|")
        ours = runs["dedup-pg"]
        for name in names:
            if name == "dedup-pg":
                continue  # (the other dedup-pg contender is a row too)
            ratios = [a["docs_s"] / b["docs_s"] for a, b in zip(ours, runs[name], strict=True)]
            cpu_ratios = [
                a["docs_cpu_s"] / b["docs_cpu_s"] for a, b in zip(ours, runs[name], strict=True)
            ]
            rep(
                f"| {name} | **{statistics.median(ratios):.2f}x** "
                f"| {', '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(cpu_ratios):.2f}x |"
            )
    rep.write(args.output or RESULTS)


if __name__ == "__main__":
    main()
