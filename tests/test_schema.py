"""The schema two ways: sql/schema/ (what a fresh database is built from) and
the revisions in sql/migrations/ (what an existing one is upgraded through)
must make the same database; every downgrade must give back the catalog of
the revision before it; released revisions must not change."""

from __future__ import annotations

import difflib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from dedup_pg import database, schema

from conftest import REPO

#: Downgrades of released revisions that are known to be inexact, as the diff
#: lines they leave (revision -> lines). They lose comments only; the files
#: are frozen, so the differences are recorded here instead of fixed there.
#: Any other difference, or a revision not listed, must be exact.
KNOWN_DOWNGRADE_DIFFERENCES = {
    "0004": [
        "-  comment 'Check and store a batch of fingerprinted documents in one transaction; one verdict row per item. Called by dedup_pg.Deduper.'",
    ],
    "0008": [
        "-  comment 'Per UTC day and source: ingested (incl. errors), new, duplicates by layer, reviews, still pending, restored, dismissed, confirmed, errors.'",
        "-  comment 'Each kept document with its duplicates: how many sites carried the story, who first, when last.'",
        "-  comment 'Check and store a batch of fingerprinted documents in one transaction (hash layers); one verdict row per item. Called by dedup_pg.Deduper.'",
        "+  comment 'Check and store a batch of fingerprinted documents in one transaction (exact, SimHash, containment, MinHash; fact check); one verdict row per item. Called by dedup_pg.Deduper.'",
    ],
    "0010": [
        "-  comment 'Day partitions of documents, document_clauses, document_sightings and duplicate_candidates (dedup-pg partitions list).'",
        '-  comment "MinHash band values of stored documents (32 per document with a signature): the MinHash layer\'s candidate lookup"',
    ],
    "0012": [
        "-  comment 'Rewrite the fingerprints of stored documents (documents incl. minhash and facts, document_clauses, document_minhash_bands, document_digests) with values computed under the current normalization; returns how many changed. Called by dedup-pg rebuild --refingerprint.'",
        "+  comment 'Rewrite the fingerprints of stored documents (documents incl. minhash and facts, document_clauses, document_minhash_bands, document_simhash_bands, document_digests) with values computed under the current normalization; returns how many changed. Called by dedup-pg rebuild --refingerprint.'",
    ],
}


@contextmanager
def empty_database(template_dsn: str) -> Iterator[str]:
    name = f"schema_{uuid.uuid4().hex[:8]}"
    admin = psycopg.conninfo.make_conninfo(template_dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield psycopg.conninfo.make_conninfo(template_dsn, dbname=name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def catalog(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return schema.catalog(conn)


def diff(a: list[str], b: list[str], a_name: str, b_name: str) -> list[str]:
    return list(difflib.unified_diff(a, b, a_name, b_name, lineterm="", n=3))


def revisions() -> list[str]:
    """Revision ids from the first to the head."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(database.packaged_dir("migrations")))
    return [
        s.revision for s in reversed(list(ScriptDirectory.from_config(config).walk_revisions()))
    ]


def test_schema_files_make_the_database_the_migrations_make(template_dsn):
    with empty_database(template_dsn) as migrated, empty_database(template_dsn) as built:
        database.migrate(migrated)
        database.create_schema(built)
        assert database.current_revision(built) == database.head_revision()
        differences = diff(
            catalog(migrated),
            catalog(built),
            "upgraded through sql/migrations",
            "built from sql/schema",
        )
    if differences:
        pytest.fail(
            "sql/schema/ and the migrations disagree:\n" + "\n".join(differences), pytrace=False
        )


def test_each_downgrade_restores_the_catalog_before_it(template_dsn):
    failures = []
    with empty_database(template_dsn) as dsn:
        previous = None
        for revision in revisions():
            before = catalog(dsn) if previous is not None else None
            database.migrate(dsn, revision)
            database.downgrade(dsn, previous or "base")
            if before is not None:
                after = catalog(dsn)
                lines = diff(before, after, f"at {previous}", f"{revision} upgraded and downgraded")
                changed = [
                    line
                    for line in lines
                    if line[:1] in "+-" and not line.startswith(("+++", "---"))
                ]
                if changed != KNOWN_DOWNGRADE_DIFFERENCES.get(revision, []):
                    failures.append("\n".join(lines))
            else:  # the first revision's downgrade leaves the extension and the version table
                assert [line for line in catalog(dsn) if not line.startswith("  ")] == [
                    "extension plpgsql",
                    "extension vector",
                    "table alembic_version",
                ]
            database.migrate(dsn, revision)
            previous = revision
    if failures:
        pytest.fail(
            "downgrades that do not restore the catalog:\n\n" + "\n\n".join(failures), pytrace=False
        )


@pytest.mark.parametrize(
    ("revision", "spec"),
    [
        ("0011", "function:dedup_ingest_semantic"),
        ("0013", "function:dedup_ingest"),
    ],
)
def test_previous_definitions_are_what_the_hand_written_downgrades_restore(
    template_dsn, revision, spec
):
    """The scanner that generated downgrades use finds, in the earlier
    revisions' SQL, the definition (settings and comment included) that the
    hand-written downgrades of 0011 and 0013 re-apply."""
    before = f"{int(revision) - 1:04d}"
    with empty_database(template_dsn) as dsn:
        database.migrate(dsn, before)
        expected = catalog(dsn)
        database.migrate(dsn, revision)
        with psycopg.connect(dsn) as conn:
            conn.execute(schema.previous_definitions(revision, [spec]))
            conn.commit()
        differences = diff(expected, catalog(dsn), f"at {before}", "restored")
    if differences:
        pytest.fail("\n".join(differences), pytrace=False)


def test_released_revisions_are_frozen():
    """migrations/checksums.txt records every released revision's files. Only
    the newest revision may be missing from it (not released yet: it may still
    change); a new revision (python -m dedup_pg.schema new-revision) freezes the
    one before it."""
    # the repository's files (an installed package has no migrations/ folder beside it)
    recorded = schema.read_checksums(REPO)
    files = schema.revision_files(REPO)
    head = max(files)
    changed, unrecorded = [], []
    for revision, paths in sorted(files.items()):
        for path in paths:
            key = path.relative_to(REPO).as_posix()
            if key not in recorded:
                if revision != head:
                    unrecorded.append(key)
            elif recorded[key] != schema.checksum(path):
                changed.append(key)
    on_disk = {p.relative_to(REPO).as_posix() for ps in files.values() for p in ps}
    missing = sorted(set(recorded) - on_disk)
    assert not changed, f"released migration files changed (make a new revision instead): {changed}"
    assert not unrecorded, (
        f"revisions older than the head are not in migrations/checksums.txt: {unrecorded}"
    )
    assert not missing, f"released migration files are gone: {missing}"


def test_schema_defines_each_object_once():
    objects = schema.schema_objects()  # raises on a second definition
    assert "function:dedup_ingest" in objects
    ingest = objects["function:dedup_ingest"]
    assert "SET plan_cache_mode = force_generic_plan" in ingest.create.text
    assert ingest.create.signature == "(jsonb, boolean, jsonb)"


def test_statements_split_at_top_level_semicolons():
    text = """-- a comment; with a semicolon
CREATE FUNCTION f(p_a text DEFAULT 'x;y', OUT n integer)
LANGUAGE plpgsql AS $$
BEGIN
    n := 1; -- inside the body
    EXECUTE format($q$SELECT 1;$q$);
END $$;

COMMENT ON FUNCTION f(text) IS 'it''s; fine';
DROP VIEW a, b;
"""
    statements = schema.split_statements(text)
    assert [(s.action, s.kind, s.names) for s in statements] == [
        ("create", "function", ("f",)),
        ("comment", "function", ("f",)),
        ("drop", "view", ("a", "b")),
    ]
    assert statements[0].comment == "-- a comment; with a semicolon"
    assert statements[0].signature == "(text)"


def test_refresh_and_renumber_an_unreleased_revision(tmp_path):
    """Two branches each made revision N and changed one object: after the
    merge, one is renumbered N+1 and its copied definitions refreshed from
    sql/schema/, its hand-written part kept; a released revision refuses both."""
    import shutil

    for folder in ("sql", "migrations"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    head = max(schema.revision_files(tmp_path))
    schema.freeze([head], tmp_path)
    made = schema.new_revision("one change", ["dedup_numbers"], root=tmp_path)
    new = made[0].name[:4]
    sql_path = next(p for p in made if p.suffix == ".sql")
    # a hand-written line, and a copy that went stale in a merge
    text = sql_path.read_text(encoding="utf-8")
    text = text.replace(
        "-- definitions copied", "UPDATE dedup_settings SET value = value;\n-- definitions copied"
    )
    current = schema.find(schema.schema_objects(), "dedup_numbers").sql()
    sql_path.write_text(text.replace(current, "-- stale\n"), encoding="utf-8")
    schema.refresh_revision(new, tmp_path)
    refreshed = sql_path.read_text(encoding="utf-8")
    assert current in refreshed and "-- stale" not in refreshed
    assert "UPDATE dedup_settings SET value = value;" in refreshed

    later = f"{int(new) + 1:04d}"
    schema.new_revision("placeholder", [], root=tmp_path)  # freezes `new`
    with pytest.raises(ValueError, match="released"):
        schema.refresh_revision(new, tmp_path)
    moved = schema.renumber_revision(later, f"{int(later) + 1:04d}", root=tmp_path)
    assert {p.name[:4] for p in moved} == {f"{int(later) + 1:04d}"}
    with pytest.raises(LookupError, match="to follow"):
        schema.renumber_revision(f"{int(later) + 1:04d}", f"{int(later) + 3:04d}", root=tmp_path)
    moved_back = schema.renumber_revision(f"{int(later) + 1:04d}", later, root=tmp_path)
    script = next(p for p in moved_back if p.suffix == ".py").read_text(encoding="utf-8")
    assert f'revision = "{later}"' in script and f'down_revision = "{new}"' in script
    assert f"{later}_placeholder.sql" in script


def test_revision_0034_moves_the_default_containment_threshold_only(template_dsn):
    """Upgrading to 0034 sets containment_threshold 0.7 where it was the old
    default 0.8 (recorded in the settings history), keeps a value a user chose,
    and a downgrade puts the old default back."""

    def value(dsn: str) -> float:
        with psycopg.connect(dsn) as conn:
            return conn.execute(
                "SELECT value::float8 FROM dedup_settings WHERE name = 'containment_threshold'"
            ).fetchone()[0]

    with empty_database(template_dsn) as default, empty_database(template_dsn) as chosen:
        for dsn in (default, chosen):
            database.migrate(dsn, "0033")
        with psycopg.connect(chosen, autocommit=True) as conn:
            conn.execute(
                "UPDATE dedup_settings SET value = '0.9' WHERE name = 'containment_threshold'"
            )
        assert value(default) == 0.8
        for dsn in (default, chosen):
            database.migrate(dsn, "0034")
        assert (value(default), value(chosen)) == (0.7, 0.9)
        with psycopg.connect(default) as conn:
            assert conn.execute(
                "SELECT old_value::float8, new_value::float8, reason FROM dedup_settings_history"
                " WHERE name = 'containment_threshold' ORDER BY change_id DESC LIMIT 1"
            ).fetchone() == (0.8, 0.7, "migration 0034: the new default")
        database.downgrade(default, "0033")
        assert value(default) == 0.8
