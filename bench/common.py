"""What the benchmark scripts share: where the data is, reading it, reporting.

The scripts run as ``python bench/NAME.py`` from the repository root, so this
module is importable as ``common``.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ../shared/data beside the checkout (as in CI), or DEDUP_PG_SHARED_DATA.
DATA = Path(os.environ.get("DEDUP_PG_SHARED_DATA", ROOT.parent / "shared" / "data"))
# Every script's processes start from an empty term table, as a first run on a
# machine does, unless DEDUP_PG_TERM_CACHE is set: a cache left by an earlier
# run would hold the very texts measured (bench/term_cache.py measures it).
os.environ.setdefault("DEDUP_PG_TERM_CACHE", "off")


def scratch_dir(prefix: str, parent: str | None = None) -> Path:
    """A new temporary folder for a run's embedded servers and files, deleted
    when the script exits (a failure included), every server under it stopped
    first: a benchmark's database is a few hundred MB that nobody reads after
    its report. ``DEDUP_PG_BENCH_KEEP=1`` keeps it (its path is printed), its
    servers stopped all the same: a server left running from a temporary
    folder holds its shared memory, and crashes when the folder is moved (a
    later ``--home`` of the folder's server home starts it again)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    atexit.register(_remove_scratch, path)
    return path


def _remove_scratch(path: Path) -> None:
    from dedup_pg import database

    for pgdata in sorted(path.rglob("pgdata")):
        try:
            database.stop_embedded(pgdata.parent)
        except Exception as exc:  # report it, and keep cleaning up
            print(f"could not stop the server in {pgdata.parent}: {exc}", file=sys.stderr)
    if os.environ.get("DEDUP_PG_BENCH_KEEP") == "1":
        print(f"kept {path} (DEDUP_PG_BENCH_KEEP=1; its servers stopped)", file=sys.stderr)
        return
    shutil.rmtree(path, ignore_errors=True)


def read_jsonl(path: Path, limit: int | None = None) -> list[dict]:
    """Rows of a JSONL file (blank lines skipped), at most ``limit``."""
    rows: list[dict] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if limit is not None and len(rows) >= limit:
                break
            if line.strip():
                rows.append(json.loads(line))
    return rows


def distinct_pool(articles: list[dict]) -> list[dict]:
    """Articles with no known near duplicate, sorted by id: in no pair of the
    8-gram candidates file, body of 200+ characters, body shared with no other
    article. The distinct pool of the quality and semantic benchmarks."""
    candidates = read_jsonl(DATA / "pairs" / "sina2018_ngram_candidates_unlabelled.jsonl")
    in_candidates = {i for p in candidates for i in (p["a_id"], p["b_id"])}
    body_count = collections.Counter(a["body"].strip() for a in articles)
    return sorted(
        (
            a
            for a in articles
            if a["id"] not in in_candidates
            and len(a["body"].strip()) >= 200
            and body_count[a["body"].strip()] == 1
        ),
        key=lambda a: a["id"],
    )


def backend_cpu(pid: int) -> float:
    """CPU seconds a backend has run so far (the scheduler's count, in ns)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def log(msg: str) -> None:
    """Progress on stderr, timestamped."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- a check's layers, timed apart ------------------------------------------------
# The lookups are timed as the engine runs them: the installed dedup_ingest in
# dry run, one new text a call, with layers left out through the call's
# overrides (a null threshold turns the MinHash layer and the fact check off)
# or the item itself (no clauses: no clause-index probe, no containment). What a
# layer costs is the difference between two of these; no SQL is copied here.
# (bench/growth.py, bench/retained_days.py)
INGEST_SQL = "SELECT verdict, layer FROM dedup_ingest(%s::jsonb, true, %s::jsonb)"
_NO_MINHASH = {"minhash_threshold": None}
_HASHES_ONLY = {**_NO_MINHASH, "facts_disagreement_share": None}
LAYER_RUNS = (  # (key, what runs, overrides, clauses kept in the item)
    ("full", "every layer", {}, True),
    ("no_minhash", "MinHash off", _NO_MINHASH, True),
    ("simhash", "exact + SimHash (no clauses, MinHash and fact check off)", _HASHES_ONLY, False),
    (
        "simhash_r1",
        "the same, review distance 7 (radius-1 band probe)",
        {**_HASHES_ONLY, "simhash_review_distance": 7, "simhash_review_margin": 7},
        False,
    ),
)


def layer_item(row: dict, clauses: bool) -> dict:
    """A prepared row as one text of a dry-run call: its clauses kept or not (a
    ``LAYER_RUNS`` entry's last field)."""
    return {**row, "pos": 0} if clauses else {**row, "pos": 0, "clauses": [], "lead": []}


def add_settings_option(ap: argparse.ArgumentParser, example: str) -> None:
    """``--set NAME=JSON``, repeatable: a setting for every database of the run
    (to measure a rule turned off, or another default). ``settings_of`` reads it."""
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help=f"a setting for every database of the run (e.g. {example})",
    )


def settings_of(values: list[str]) -> dict:
    """``--set`` values as {name: value}, each value read as JSON."""
    return {k: json.loads(v) for k, v in (x.split("=", 1) for x in values)}


class Report:
    """Print lines as they come and keep them for the results file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")


def engine_revision() -> str:
    """The repository commit, marked when engine files differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "status",
                "--porcelain",
                "--",
                "dedup_pg",
                "sql",
                "migrations",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (with uncommitted engine changes)" if dirty else "")


def cpu_model() -> str:
    """The processor's model name (Linux), for the results' machine table."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def pct(values: list[float], q: float) -> float:
    """The q-quantile of ``values``, linearly interpolated."""
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def verdict_label(v: object) -> str:
    """``verdict/layer`` of a Verdict, for counting outcomes."""
    verdict, layer = v.verdict, v.layer  # type: ignore[attr-defined]
    return f"{verdict}/{layer}" if layer else verdict


def allow_backfill(dd, future_hours: float | None = None) -> None:
    """Accept any past seen_at in ``dd``'s database: the corpus is replayed at
    fixed past dates (2018, 2024), which the default seen_at window refuses;
    ``future_hours``: a calendar that runs ahead of the clock, too."""
    dd.set_setting("seen_at_past_days", 0)
    if future_hours is not None:
        dd.set_setting("seen_at_future_hours", future_hours)
