"""Throughput of the HTTP service's POST /v1/ingest on real Sina articles.

Starts `dedup-pg serve` on a fresh embedded database (loopback), then posts the
articles in batches of several sizes, from 1 and from 4 concurrent clients, each
configuration on its own slice of articles (so every request does real work),
and prints documents per second. Run: python bench/service_throughput.py
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from common import DATA, scratch_dir

SINA = DATA / "news" / "sina2018.jsonl"
OUT = Path(__file__).resolve().parent / "results" / "service_throughput.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-config", type=int, default=1000, help="articles per configuration")
    args = parser.parse_args()
    articles = [json.loads(line) for line in SINA.open(encoding="utf-8")]
    home = str(scratch_dir("dedup-pg-svc-bench-"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dedup_pg.cli",
            "serve",
            "--home",
            home,
            "--port",
            str(port),
            "--pool-size",
            "4",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        rows = []
        offset = 0
        client = httpx.Client(timeout=120)
        for batch in (1, 10, 100, 500):
            for clients in (1, 4):
                n = min(args.per_config, 200 if batch == 1 else args.per_config)
                docs = [
                    {"id": a["id"], "title": a["title"], "body": a["body"], "source": "bench"}
                    for a in articles[offset : offset + n]
                ]
                offset += n
                batches = [docs[i : i + batch] for i in range(0, len(docs), batch)]
                started = time.perf_counter()
                with ThreadPoolExecutor(clients) as pool:
                    results = list(
                        pool.map(
                            lambda b: client.post(f"{url}/v1/ingest", json={"documents": b}),
                            batches,
                        )
                    )
                elapsed = time.perf_counter() - started
                assert all(r.status_code == 200 for r in results)
                verdicts = [v["verdict"] for r in results for v in r.json()["verdicts"]]
                rows.append(
                    (
                        batch,
                        clients,
                        len(docs),
                        elapsed,
                        len(docs) / elapsed,
                        {k: verdicts.count(k) for k in sorted(set(verdicts))},
                    )
                )
                print(
                    f"batch {batch:>4}  clients {clients}  {len(docs):>5} docs  {len(docs) / elapsed:7.0f} docs/s"
                )
    finally:
        server.terminate()
        server.wait(timeout=30)
        subprocess.run(
            [sys.executable, "-m", "dedup_pg.cli", "stop", "--home", home], capture_output=True
        )
    lines = [
        "## POST /v1/ingest throughput",
        "",
        f"`python bench/service_throughput.py`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        "real Sina articles, fresh embedded database, server with 4 connections, on this 2-core machine "
        "(server, clients and PostgreSQL share the cores).",
        "",
        "| documents per request | concurrent clients | documents | seconds | docs/s | verdicts |",
        "|---|---|---|---|---|---|",
    ]
    for batch, clients, n, elapsed, rate, verdicts in rows:
        lines.append(f"| {batch} | {clients} | {n} | {elapsed:.1f} | {rate:.0f} | {verdicts} |")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written to {OUT}")


if __name__ == "__main__":
    main()
