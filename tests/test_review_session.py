"""REVIEW.md is a real psql session: replay it through the bundled psql and
check that every command still prints what the document says."""

import json
import re
import subprocess
from importlib.resources import files

from dedup_pg import Deduper, database

from conftest import REPO

BLOCK = re.compile(r"```sql\n(.*?)\n```\s*\n```text\n(.*?)\n```", re.S)


def test_review_md_session_replays_in_psql(dsn):
    sample = files("dedup_pg.data").joinpath("demo.jsonl").read_text(encoding="utf-8")
    with Deduper(dsn) as dd:  # the state `dedup-pg demo` leaves
        verdicts = list(dd.ingest_many(json.loads(line) for line in sample.splitlines() if line))
    assert [v.verdict for v in verdicts].count("review") == 1
    steps = BLOCK.findall((REPO / "REVIEW.md").read_text(encoding="utf-8"))
    assert len(steps) >= 10
    psql = database.psql_binary()
    for sql, expected in steps:
        result = subprocess.run(
            [psql, "-X", "-q", "-P", "pager=off", "-d", dsn, "-f", "-"],
            input=sql,
            capture_output=True,
            text=True,
            timeout=60,
        )
        got = "\n".join(
            line.rstrip() for line in (result.stdout + result.stderr).strip("\n").splitlines()
        )
        assert got == expected, f"REVIEW.md step\n{sql}\nprinted\n{got}"
