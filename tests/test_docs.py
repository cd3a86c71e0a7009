"""README.md against the code: the generated parts are current (cog --check),
and, read back from the README itself, every setting default, command, verdict
field, migration and the normalization version agree with what the code and a
freshly migrated database say. A change to any of them without the README
changing fails here; `cog -I docs -r README.md` regenerates it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import psycopg
import pytest
from cogapp import Cog

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
sys.path.insert(0, str(REPO / "docs"))

import readme_parts  # noqa: E402


@pytest.fixture
def docs_dsn(dsn, monkeypatch):
    """readme_parts reads the defaults from this fresh database."""
    monkeypatch.setenv("DEDUP_PG_DOCS_DSN", dsn)
    readme_parts._defaults.cache_clear()
    yield dsn
    readme_parts._defaults.cache_clear()


def readme() -> str:
    return README.read_text(encoding="utf-8")


def section(title: str) -> str:
    """The README's text under a heading, up to the next heading of its level or above."""
    level = len(title.partition(" ")[0])
    return re.split(rf"\n#{{1,{level}}} ", readme().split(f"\n{title}\n", 1)[1], maxsplit=1)[0]


def generated(text: str) -> list[str]:
    """The output parts of the cog blocks."""
    return re.findall(r"\]\]\] -->\n(.*?)<!-- \[\[\[end\]\]\] -->", text, re.S)


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    """Cells of the table rows whose first cell matches ``first_cell``."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and re.match(first_cell, line[2:]):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_generated_parts_are_current(docs_dsn, capsys):
    status = Cog().main(["cog", "-I", str(REPO / "docs"), "--check", "--diff", str(README)])
    out = capsys.readouterr()
    assert status == 0, "README.md is stale: run `cog -I docs -r README.md`\n" + out.out + out.err


def test_every_generated_block_has_output():
    text = readme()
    blocks = generated(text)
    assert len(blocks) == text.count("[[[cog") >= 8
    assert all(block.strip() for block in blocks), "an empty generated block"


def test_setting_defaults_are_the_databases(docs_dsn):
    with psycopg.connect(docs_dsn) as conn:
        database = dict(conn.execute("SELECT name, value::text FROM dedup_settings").fetchall())
    documented = {
        row[0].strip("`"): row[1].strip("`")
        for row in table_rows(section("## Settings"), r"`[a-z_]+` \| `")
    }
    assert documented == database


def test_setting_defaults_quoted_in_prose_are_the_databases(docs_dsn):
    """`name` (default 7), `name` (0.3), (`name`, 10), 0.5 (`name`), 15% of its own,
    `name`: the number is the default."""
    with psycopg.connect(docs_dsn) as conn:
        database = dict(conn.execute("SELECT name, value::text FROM dedup_settings").fetchall())
    text = readme()
    quoted = [
        (name, float(value))
        for name, value in re.findall(r"`([a-z_]+)`,?\s+\(?(?:default\s)?(-?\d+(?:\.\d+)?)\b", text)
    ] + [
        (name, float(value) / (100 if percent else 1))
        for value, percent, name in re.findall(
            r"(\d+(?:\.\d+)?)(%?)(?: of its own)?,?\s+\(?`([a-z_]+)`", text
        )
    ]
    quoted = [(name, value) for name, value in quoted if name in database]
    for name, value in quoted:
        assert value == float(database[name]), f"README says {name} = {value}"
    assert len(quoted) >= 8, quoted


def test_commands_are_the_clis():
    listed = {name for name, _ in readme_parts.commands()}
    rows = table_rows(section("## Use it from the shell"), r"`dedup-pg ")
    documented = set()
    for row in rows:
        usage = row[0].strip("`").split()[1:]
        # the command path is the words before its first argument (upper case)
        documented.add(" ".join(w for w in usage if not w.lstrip("[").isupper()))
    assert documented == listed
    for name, command in readme_parts.commands():
        row = next(r for r in rows if r[0] == f"`{readme_parts.usage(name, command)}`")
        for option in readme_parts.options(command):
            assert f"`{option}`" in row[2], f"{name}: {option} not in the README"


def test_verdict_fields_are_the_verdicts():
    from dataclasses import fields

    from dedup_pg.verdicts import Verdict

    keys = readme_parts.verdict_keys()
    assert sorted(keys) == sorted(f.name for f in fields(Verdict))
    verdicts = section("### Verdicts")
    documented = [
        name.strip("` ") for row in table_rows(verdicts, r"`[a-z_]+`") for name in row[0].split("/")
    ]
    assert sorted(documented) == sorted(keys)
    example = json.loads(verdicts.split("```json\n", 1)[1].split("```", 1)[0])
    assert list(example) == keys


def test_migrations_are_listed():
    text = readme()
    revisions = [path.stem for path in (REPO / "migrations" / "versions").glob("[0-9]*.py")]
    assert revisions
    for stem in revisions:
        assert f"`migrations/versions/{stem}.py`" in text, f"{stem} not in the README"


def test_normalization_version():
    from dedup_pg.normalize import NORMALIZATION_VERSION

    versions = re.findall(r"Normalization version: \*\*(\d+)\*\*", readme())
    assert versions == [str(NORMALIZATION_VERSION)]
    assert not re.search(r"Normalization \(version \d", readme())


def test_compose_runs_the_postgresql_major_the_tests_run_on(dsn):
    """docker-compose.yml is the server for users who want no embedded one: the
    same major version as the embedded server every test runs on."""
    compose = (Path(__file__).resolve().parents[1] / "docker-compose.yml").read_text()
    images = re.findall(r"image:\s*pgvector/pgvector:pg(\d+)", compose)
    with psycopg.connect(dsn) as conn:
        major = conn.info.server_version // 10000
    assert images == [str(major)]


def test_simhash_band_vacuum_threshold_is_the_partitions(dsn):
    """The rows after which the README says a SimHash band partition is vacuumed
    are the threshold dedup_ensure_partitions gives a new partition."""
    (quoted,) = re.findall(
        r"vacuumed\s+by\s+autovacuum\s+after\s+every\s+([\d,]+)\s+rows\s+inserted", readme()
    )
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT dedup_ensure_partitions(current_date, current_date)")
        (options,) = conn.execute(
            "SELECT c.reloptions FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'document_simhash_bands'::regclass LIMIT 1"
        ).fetchone()
        conn.rollback()
    settings = dict(o.split("=") for o in options)
    assert settings["autovacuum_vacuum_insert_threshold"] == quoted.replace(",", "")
    assert settings["autovacuum_vacuum_insert_scale_factor"] == "0"
